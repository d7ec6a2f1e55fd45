// The published NVIDIA tensor-core models as candidates (fp8q/kernels/fit.hpp). Source: F. A.
// Khattak and M. Mikaitis, "Accurate Models of NVIDIA Tensor Cores" (arXiv 2512.07004, ACM TACO),
// whose models (github.com/north-numerical-computing/MATLAB-tensor-core, models/*TC.m) have
// fma = n products per step, neab extra alignment bits: A = 23 + neab and R = 23 for neab >= 0,
// A = R = 23 + neab for neab < 0; rz or rne; C inside the first step's alignment.
#include <array>

#include "fp8q/kernels/fit.hpp"

namespace fp8q {
namespace {

constexpr std::array<PublishedModel, 9> kPublished{{
    {"V100", false, false, "fused:4:23:rtz"},                                       // fma 4, neab 0
    {"A100, A2, A30, Ada (RTX 1000), L40S", false, true, "fused:8:align24:result23:rtz"},  // fma 8, neab 1
    {"Ada (RTX 1000), L40S", true, false, "fused:16:13:rtz"},                       // fma 16, neab -10
    {"H100, H200", false, true, "fused:16:align25:result23:rtz"},                   // fma 16, neab 2
    {"H100, H200", true, false, "fused:32:13:rtz"},                                 // fma 32, neab -10
    {"B200, RTX PRO 6000", false, true, "fused:16:align25:result23:rtz"},           // fma 16, neab 2
    {"B200, RTX PRO 6000", true, false, "fused:32:align25:result23:rtz"},           // fma 32, neab 2
    {"B200 (nearest-even variant)", false, true, "fused:16:align25:result23:rne"},  // B200TCRN
    {"B200 (nearest-even variant)", true, false, "fused:32:align25:result23:rne"},
}};

bool is_fp8(FormatId f) { return f == FormatId::kE4M3FN || f == FormatId::kE5M2; }

}  // namespace

std::span<const PublishedModel> published_models() { return kPublished; }

std::vector<PublishedModel> published_as(const Candidate& c, FormatId a, FormatId b) {
  const bool fp8 = is_fp8(a) && is_fp8(b);
  const bool sixteen = (a == FormatId::kF16 || a == FormatId::kBF16) && a == b;  // no mixed FP16/BF16 MMA
  std::vector<PublishedModel> out;
  if (!fp8 && !sixteen) return out;
  for (const PublishedModel& p : kPublished)
    if (p.fp8 == fp8 && (fp8 || p.bf16 || a == FormatId::kF16) && p.c_role == c.c_role && parse_model(p.model) == c.model)
      out.push_back(p);
  return out;
}

}  // namespace fp8q
