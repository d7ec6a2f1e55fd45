// Device profiles: the table of profile.hpp, and the checks that a matmul fits the chip.
#include "fp8q/kernels/profile.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace fp8q {
namespace {

using F = FormatId;
constexpr std::array kTrn2Formats = {F::kE4M3, F::kE5M2, F::kE3M4};
constexpr std::array kTrn3Formats = {F::kE4M3FN, F::kE4M3, F::kE5M2};
constexpr std::array kTrn3Mx = {F::kE4M3FN, F::kE5M2, F::kE2M1};
constexpr std::array kOcpFormats = {F::kE4M3FN, F::kE5M2};
constexpr std::array kMxAll = {F::kE4M3FN, F::kE5M2, F::kE2M3, F::kE3M2, F::kE2M1};
constexpr std::array kNvfp4 = {F::kE2M1};
constexpr std::array kAllElements = {F::kE4M3FN, F::kE4M3,     F::kE5M2, F::kE4M3FNUZ, F::kE5M2FNUZ,
                                     F::kE3M4,   F::kE2M3,     F::kE3M2, F::kE2M1};

const std::array<DeviceProfile, 5> kProfiles = {{
    {ProfileId::kTrn2, "trn2", kTrn2Formats, kMxAll, true, AccumulationModel::systolic(128),
     AccumulationModel::systolic(128), true, {}, {}},
    {ProfileId::kTrn3, "trn3", kTrn3Formats, kTrn3Mx, false, AccumulationModel::systolic(128),
     AccumulationModel::trainium3_mx(Trn3Layout::kWrapX), false, {}, {}},
    {ProfileId::kOcp, "ocp", kOcpFormats, kMxAll, true, AccumulationModel::fp32_sequential(),
     AccumulationModel::exact_block(32), false, kNvfp4, AccumulationModel::exact_block(16)},
    {ProfileId::kHopper, "hopper", kOcpFormats, {}, true, AccumulationModel::hopper(), AccumulationModel::hopper(), false,
     {}, {}},
    {ProfileId::kFp32, "fp32", kAllElements, kMxAll, true, AccumulationModel::fp32_sequential(),
     AccumulationModel::fp32_sequential(), false, kAllElements, AccumulationModel::fp32_sequential()},
}};

std::string list(std::span<const FormatId> fs) {
  std::string s;
  for (FormatId f : fs) s += (s.empty() ? "" : ", ") + std::string(format_of(f).name);
  return s;
}

}  // namespace

const DeviceProfile& device_profile(ProfileId id) { return kProfiles[static_cast<std::size_t>(id)]; }

std::optional<ProfileId> parse_profile(std::string_view name) {
  for (const DeviceProfile& p : kProfiles)
    if (p.name == name) return p.id;
  return std::nullopt;
}

GemmOptions gemm_options(const DeviceProfile& p, const GemmArgs& g, std::optional<AccumulationModel> model_override,
                         int threads) {
  const std::string who = "profile " + std::string(p.name) + ": ";
  const bool mx = g.a.granularity.kind == GranularityKind::kMx || g.b.granularity.kind == GranularityKind::kMx;
  if (mx && p.mx_elements.empty())
    throw std::invalid_argument(who + "MX operands (E8M0 scales per 32 along K) are not supported: " +
                                std::string(p.name) + " has no MX matmul");
  const bool nv = g.a.granularity.kind == GranularityKind::kNvfp4 || g.b.granularity.kind == GranularityKind::kNvfp4;
  if (nv && p.nvfp4_elements.empty())
    throw std::invalid_argument(who + "NVFP4 operands (E4M3FN scales per 16 along K) are not supported: " +
                                std::string(p.name) + " has no NVFP4 matmul (profiles ocp and fp32 have)");
  const std::span<const FormatId> allowed = nv ? p.nvfp4_elements : mx ? p.mx_elements : p.formats;
  for (const auto& [op, name] : {std::pair{&g.a, "a"}, std::pair{&g.b, "b"}})
    if (std::find(allowed.begin(), allowed.end(), op->format) == allowed.end())
      throw std::invalid_argument(who + name + " is " + std::string(format_of(op->format).name) + ", not a " +
                                  (nv ? "NVFP4 element format" : mx ? "MX element format" : "matmul format") + " of " +
                                  std::string(p.name) + " (" + list(allowed) + ")");
  const bool e4m3_pair = (g.a.format == F::kE4M3FN && g.b.format == F::kE4M3) ||
                         (g.a.format == F::kE4M3 && g.b.format == F::kE4M3FN);
  if (e4m3_pair && !p.mixes_e4m3_variants)
    throw std::invalid_argument(who + "a is " + std::string(format_of(g.a.format).name) + " and b is " +
                                std::string(format_of(g.b.format).name) + ": " + std::string(p.name) +
                                " never mixes e4m3fn with e4m3 in one matmul");
  GemmOptions o;
  o.model = model_override.value_or(nv ? p.nvfp4_model : mx ? p.mx_model : p.plain_model);
  validate(o.model);
  o.mx_dequantize_to_bf16 = mx && p.mx_dequantize_to_bf16;
  o.threads = threads;
  return o;
}

}  // namespace fp8q
