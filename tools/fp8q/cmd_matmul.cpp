// fp8q matmul IN.safetensors OUT.safetensors --profile trn2|trn3|ocp|hopper|fp32
//             [--model MODEL] [--out-dtype f32|bf16] [--threads N]
// The quantized GEMM of kernels/ on safetensors files: D = epilogue(A x B) as the profile's
// chip computes it, bit for bit. IN holds the operands in the encoding quantize-tensors writes
// (docs/tensors.md); OUT holds `d`. The contract (accepted tensors, shapes, the format rules)
// is docs/drafts/kernels2.md, section "fp8q matmul". OUT appears only when complete.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/kernels/gemm.hpp"
#include "fp8q/kernels/profile.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/format.hpp"
#include "args.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

namespace ck = fp8q::checkpoint;
using Shape = std::vector<std::uint64_t>;

struct MatmulArgs {
  std::string in, out, profile, model, out_dtype = "f32", c_role = "epilogue";
  int threads = 1;
};

const std::set<std::string> kAccepted = {"a",  "a.scale_inv",  "a.scale",  "a.global_scale",  "b",
                                         "b.scale_inv", "b.scale", "b.global_scale", "bt", "bt.scale_inv",
                                         "bt.scale", "bt.global_scale", "c", "bias"};

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::size_t cdiv(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

// ---- reading IN ----------------------------------------------------------------------------------
class Input {
 public:
  explicit Input(const std::string& path) : in_(path), where_(path + ": ") {
    for (const ck::TensorInfo& t : in_.tensors())
      if (!kAccepted.contains(t.name))
        fail(t.name, "is not an operand of matmul (accepted: a, b or bt, their .scale_inv or .scale and "
                     ".global_scale, c, bias)");
  }
  const ck::TensorInfo* find(const std::string& name) const { return in_.find(name); }

  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    throw UsageError(where_ + "tensor '" + tensor + "' " + what);
  }
  [[noreturn]] void fail_meta(const std::string& key, const std::string& what) const {
    throw UsageError(where_ + "__metadata__ '" + key + "' " + what);
  }

  // The element format of codes tensor `name`: the per-tensor key fp8q.elem.NAME if present
  // (it must agree with the dtype); else the dtype F8_E4M3 (e4m3fn) / F8_E5M2 (e5m2); else, for
  // U8, the file's fp8q.elem (which must name a U8 format).
  FormatId format_of_codes(const std::string& name) const {
    const ck::TensorInfo& t = in_.at(name);
    std::optional<FormatId> by_dtype;
    if (t.dtype == ck::DType::kF8_E4M3) by_dtype = FormatId::kE4M3FN;
    else if (t.dtype == ck::DType::kF8_E5M2) by_dtype = FormatId::kE5M2;
    else if (t.dtype != ck::DType::kU8)
      fail(name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + "; codes are F8_E4M3, F8_E5M2 or U8");
    auto meta_format = [&](const std::string& key) -> std::optional<FormatId> {
      const auto it = in_.metadata().find(key);
      if (it == in_.metadata().end()) return std::nullopt;
      const auto f = element_format(it->second);
      if (!f) fail_meta(key, "= '" + it->second + "' is not an element format (" + kElementFormatNames + ")");
      return f;
    };
    const std::string own_key = "fp8q.elem." + name;
    if (const auto f = meta_format(own_key)) {
      const bool f8 = *f == FormatId::kE4M3FN || *f == FormatId::kE5M2;
      if ((by_dtype && *by_dtype != *f) || (!by_dtype && f8))
        fail(name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + " but __metadata__ '" + own_key + "' says " +
                       std::string(fp8q::format_of(*f).name) + " (e4m3fn is F8_E4M3, e5m2 is F8_E5M2, others U8)");
      return *f;
    }
    if (by_dtype) return *by_dtype;
    const auto f = meta_format("fp8q.elem");
    if (!f)
      fail(name, "has dtype U8: name its element format in __metadata__ '" + own_key + "' or 'fp8q.elem'");
    if (*f == FormatId::kE4M3FN || *f == FormatId::kE5M2)
      fail(name, "has dtype U8 but __metadata__ 'fp8q.elem' is " + std::string(fp8q::format_of(*f).name) +
                     ", whose codes are F8_E4M3 / F8_E5M2; set '" + own_key + "'");
    return *f;
  }

  // A 2-D codes tensor as rows x cols codes, one per byte (e2m1 unpacked: element 2i in bits
  // 0-3 of byte i, element 2i + 1 in bits 4-7, so cols = 2 x the stored last dimension).
  std::vector<std::uint8_t> codes(const std::string& name, FormatId f, std::size_t& rows, std::size_t& cols) const {
    const ck::TensorInfo& t = in_.at(name);
    if (t.shape.size() != 2) fail(name, "has shape " + shape_str(t.shape) + "; codes must be 2-D");
    const auto bytes = in_.bytes(t);
    rows = t.shape[0];
    const Format& fmt = fp8q::format_of(f);
    std::vector<std::uint8_t> out;
    if (f == FormatId::kE2M1) {
      cols = 2 * t.shape[1];
      out.resize(rows * cols);
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        const auto b = std::to_integer<std::uint8_t>(bytes[i]);
        out[2 * i] = b & 0xF, out[2 * i + 1] = b >> 4;
      }
      return out;
    }
    cols = t.shape[1];
    out.resize(rows * cols);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = std::to_integer<std::uint8_t>(bytes[i]);
      if ((out[i] >> fmt.bits()) != 0)
        fail(name, "[" + std::to_string(i / cols) + ", " + std::to_string(i % cols) + "]: byte " + std::to_string(out[i]) +
                       " is not a " + std::string(fmt.name) + " code (high bits must be 0)");
    }
    return out;
  }

  std::vector<float> f32(const std::string& name, bool positive) const {
    const ck::TensorInfo& t = in_.at(name);
    if (t.dtype != ck::DType::kF32) fail(name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + ", expected F32");
    std::vector<float> v(t.numel());
    std::memcpy(v.data(), in_.bytes(t).data(), v.size() * sizeof(float));
    if (positive)
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]) || !(v[i] > 0.0f))
          fail(name, "[" + std::to_string(i) + "] = " + std::to_string(v[i]) + " is not a finite positive scale");
    return v;
  }

  std::vector<std::uint8_t> e4m3(const std::string& name) const {
    const ck::TensorInfo& t = in_.at(name);
    std::vector<std::uint8_t> v(t.numel());
    std::memcpy(v.data(), in_.bytes(t).data(), v.size());
    return v;
  }

  std::vector<std::uint8_t> e8m0(const std::string& name) const {
    const ck::TensorInfo& t = in_.at(name);
    if (t.dtype != ck::DType::kU8 && t.dtype != ck::DType::kF8_E8M0)
      fail(name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + "; MX scales are U8 (or F8_E8M0) E8M0 codes");
    std::vector<std::uint8_t> v(t.numel());
    std::memcpy(v.data(), in_.bytes(t).data(), v.size());
    return v;
  }

  const Shape& shape(const std::string& name) const { return in_.at(name).shape; }
  ck::DType dtype(const std::string& name) const { return in_.at(name).dtype; }

  // NVFP4's tensor scale S: F32 with one element, finite and > 0.
  float global_scale(const std::string& name) const {
    if (!find(name)) fail(name, "is missing: an NVFP4 operand (F8_E4M3 .scale) needs its tensor scale S, F32 [1]");
    if (shape(name) != Shape{1}) fail(name, "has shape " + shape_str(shape(name)) + "; NVFP4's global scale is [1]");
    return f32(name, true)[0];
  }

 private:
  ck::Reader in_;
  std::string where_;
};

// ---- scale_inv: the shape decides the granularity ---------------------------------------------------
struct ScaleShapes {
  Shape per, block;  // per row of A / column of B; the 1x128 or 128x128 block grid
  std::string per_name, block_name;
};

struct Fits {
  bool tensor = false, per = false, block = false;
};

Fits fits(const Shape& s, const ScaleShapes& want) {
  return {s == Shape{1} || s == Shape{1, 1}, s == want.per, s == want.block};
}

// ---- the operands ----------------------------------------------------------------------------------
struct Operands {
  std::size_t m = 0, n = 0, k = 0;
  FormatId fa{}, fb{};
  std::vector<std::uint8_t> a, b;  // A M x K, B K x N (bt transposed)
  Granularity ga = Granularity::tensor(), gb = Granularity::tensor();  // gemm.hpp: on A [M, K] and B [K, N]
  std::vector<float> inv_a, inv_b, c, bias;
  std::vector<std::uint8_t> mx_a, mx_b;  // scale codes: E8M0 (MX) or E4M3FN (NVFP4)
  float global_a = 1.0f, global_b = 1.0f;  // NVFP4's tensor scales

  GemmArgs args(CRole c_role) const {
    return {.m = m, .n = n, .k = k,
            .a = {.format = fa, .codes = a, .granularity = ga, .scale_inv = inv_a, .scale_codes = mx_a, .global_scale = global_a},
            .b = {.format = fb, .codes = b, .granularity = gb, .scale_inv = inv_b, .scale_codes = mx_b, .global_scale = global_b},
            .c = c, .bias = bias, .c_role = c_role};
  }
};

Operands load(const Input& in) {
  Operands op;
  if (!in.find("a")) throw UsageError("no tensor 'a' (the M x K codes of A) in the input");
  const bool has_b = in.find("b") != nullptr, has_bt = in.find("bt") != nullptr;
  if (has_b == has_bt)
    throw UsageError(has_b ? "the input holds both 'b' and 'bt': give B once (b is K x N, bt is B transposed, N x K)"
                           : "no tensor 'b' (K x N codes) or 'bt' (B transposed, N x K codes) in the input");
  const std::string bn = has_b ? "b" : "bt";
  op.fa = in.format_of_codes("a");
  op.fb = in.format_of_codes(bn);
  std::size_t ra, ca, rb, cb;
  op.a = in.codes("a", op.fa, ra, ca);
  std::vector<std::uint8_t> braw = in.codes(bn, op.fb, rb, cb);
  op.m = ra, op.k = ca;
  const std::size_t kb_ = has_b ? rb : cb;
  op.n = has_b ? cb : rb;
  if (kb_ != op.k)
    in.fail(bn, "is " + std::to_string(rb) + " x " + std::to_string(cb) + " codes: its K (" + std::to_string(kb_) +
                    ") differs from a's K = " + std::to_string(op.k) + " (a is M x K, " +
                    (has_b ? "b is K x N)" : "bt is N x K)"));
  if (has_b) {
    op.b = std::move(braw);
  } else {
    op.b.resize(op.k * op.n);
    for (std::size_t n = 0; n < op.n; ++n)
      for (std::size_t k = 0; k < op.k; ++k) op.b[k * op.n + n] = braw[n * op.k + k];
  }
  const std::size_t M = op.m, N = op.n, K = op.k, kb = cdiv(K, 128), nb = cdiv(N, 128), kg = cdiv(K, 32);

  // MX scales (E8M0 along K)
  for (const std::string& x : {std::string("a"), bn})
    if (in.find(x + ".scale") && in.find(x + ".scale_inv"))
      in.fail(x + ".scale", "and '" + x + ".scale_inv' are both given: an operand has MX scales or scale_inv, not both");
  // NVFP4: F8_E4M3 scales per 16 along K (1 x 16 or 16 x 16 blocks of the stored matrix)
  const bool nv_a = in.find("a.scale") && in.dtype("a.scale") == ck::DType::kF8_E4M3;
  const bool nv_b = in.find(bn + ".scale") && in.dtype(bn + ".scale") == ck::DType::kF8_E4M3;
  for (const std::string& x : {std::string("a"), bn})
    if (in.find(x + ".global_scale") && !(x == "a" ? nv_a : nv_b))
      in.fail(x + ".global_scale", "is given but '" + x + ".scale' is not NVFP4 scales (F8_E4M3)");
  const std::size_t k16 = cdiv(K, 16);
  if (nv_a) {
    const Shape s = in.shape("a.scale");
    if (s != Shape{M, k16} && s != Shape{cdiv(M, 16), k16})
      in.fail("a.scale", "has shape " + shape_str(s) + "; NVFP4 scales of A are [M, ceil(K/16)] = " + shape_str({M, k16}) +
                             " (1x16) or [ceil(M/16), ceil(K/16)] = " + shape_str({cdiv(M, 16), k16}) + " (16x16)");
    op.ga = s == Shape{M, k16} ? Granularity::nvfp4() : Granularity::nvfp4_2d();
    op.mx_a = in.e4m3("a.scale"), op.global_a = in.global_scale("a.global_scale");
  }
  if (nv_b) {
    const std::string sn = bn + ".scale";
    const Shape s = in.shape(sn);
    const Shape col = has_b ? Shape{k16, N} : Shape{N, k16}, sq = has_b ? Shape{k16, cdiv(N, 16)} : Shape{cdiv(N, 16), k16};
    if (s != col && s != sq)
      in.fail(sn, "has shape " + shape_str(s) + "; NVFP4 scales of B along K are " + shape_str(col) + " (16 x 1 on B) or " +
                      shape_str(sq) + " (16x16)");
    op.gb = s == col ? Granularity::nvfp4_column() : Granularity::nvfp4_2d();
    std::vector<std::uint8_t> v = in.e4m3(sn);
    const std::size_t cols = s == col ? N : cdiv(N, 16);  // B's grid [k16, cols]
    if (has_b) {
      op.mx_b = std::move(v);
    } else {
      op.mx_b.resize(k16 * cols);
      for (std::size_t n = 0; n < cols; ++n)
        for (std::size_t j = 0; j < k16; ++j) op.mx_b[j * cols + n] = v[n * k16 + j];
    }
    op.global_b = in.global_scale(bn + ".global_scale");
  }
  if (in.find("a.scale") && !nv_a) {
    if (in.shape("a.scale") != Shape{M, kg})
      in.fail("a.scale", "has shape " + shape_str(in.shape("a.scale")) + "; MX scales of A (32 along K) are [M, ceil(K/32)] = " +
                             shape_str({M, kg}));
    op.mx_a = in.e8m0("a.scale"), op.ga = Granularity::mx();
  }
  if (in.find(bn + ".scale") && !nv_b) {
    const std::string sn = bn + ".scale";
    const Shape want = has_b ? Shape{kg, N} : Shape{N, kg};
    const Shape s = in.shape(sn);
    if (s != want) {
      if (has_b && s == Shape{K, cdiv(N, 32)})
        in.fail(sn, "has shape " + shape_str(s) + ": MX blocks along N (quantize-tensors' last axis), but the matmul needs "
                    "them along K: give B transposed as 'bt' (N x K) with 'bt.scale' [N, ceil(K/32)], or b.scale as " +
                    shape_str(want));
      in.fail(sn, "has shape " + shape_str(s) + "; MX scales of B (32 along K) are " + shape_str(want) +
                      (has_b ? " = [ceil(K/32), N]" : " = [N, ceil(K/32)]"));
    }
    std::vector<std::uint8_t> v = in.e8m0(sn);
    if (has_b) {
      op.mx_b = std::move(v);
    } else {
      op.mx_b.resize(kg * N);
      for (std::size_t n = 0; n < N; ++n)
        for (std::size_t j = 0; j < kg; ++j) op.mx_b[j * N + n] = v[n * kg + j];
    }
    op.gb = Granularity::mx_column();
  }

  // scale_inv: tensor [1], per row / column, or 1x128 / 128x128 blocks
  const ScaleShapes wa{{M, 1}, {M, kb}, "[M, 1] (per row of A)", "[M, ceil(K/128)] (1x128 blocks)"};
  const ScaleShapes wb = has_b ? ScaleShapes{{1, N}, {kb, nb}, "[1, N] (per column of B)", "[ceil(K/128), ceil(N/128)] (128x128 blocks)"}
                               : ScaleShapes{{N, 1}, {nb, kb}, "[N, 1] (per row of bt = column of B)",
                                             "[ceil(N/128), ceil(K/128)] (128x128 blocks of bt)"};
  const std::string ia = "a.scale_inv", ib = bn + ".scale_inv";
  const bool has_ia = in.find(ia) != nullptr, has_ib = in.find(ib) != nullptr;
  const Fits fa = has_ia ? fits(in.shape(ia), wa) : Fits{}, fb = has_ib ? fits(in.shape(ib), wb) : Fits{};
  const bool plain_a = !has_ia || fa.tensor || fa.per, plain_b = !has_ib || fb.tensor || fb.per;
  if (has_ia && has_ib && fa.block && fb.block && (!plain_a || !plain_b)) {
    op.ga = Granularity::block(1, 128), op.gb = Granularity::block(128, 128);
    op.inv_a = in.f32(ia, true);
    std::vector<float> v = in.f32(ib, true);
    if (has_b) {
      op.inv_b = std::move(v);
    } else {  // bt's grid [nb, kb] -> B's [kb, nb]
      op.inv_b.resize(kb * nb);
      for (std::size_t i = 0; i < nb; ++i)
        for (std::size_t j = 0; j < kb; ++j) op.inv_b[j * nb + i] = v[i * kb + j];
    }
  } else {
    auto plain = [&](const std::string& name, bool has, const Fits& f, const ScaleShapes& w, const std::string& other,
                     Granularity& g, Granularity per, std::vector<float>& v) {
      if (!has) return;
      if (!f.tensor && !f.per) {
        if (f.block)
          in.fail(name, "has the block shape " + w.block_name + ", which needs the other operand block-scaled too: '" +
                            other + "' is " + (in.find(other) ? "shaped " + shape_str(in.shape(other)) : std::string("absent")));
        in.fail(name, "has shape " + shape_str(in.shape(name)) + ", which is none of [1] (per tensor), " + w.per_name + " = " +
                          shape_str(w.per) + ", " + w.block_name + " = " + shape_str(w.block));
      }
      g = f.tensor ? Granularity::tensor() : per;
      v = in.f32(name, true);
    };
    plain(ia, has_ia, fa, wa, ib, op.ga, Granularity::row(), op.inv_a);
    plain(ib, has_ib, fb, wb, ia, op.gb, Granularity::column(), op.inv_b);
  }

  if (in.find("c")) {
    if (in.shape("c") != Shape{M, N}) in.fail("c", "has shape " + shape_str(in.shape("c")) + ", expected [M, N] = " + shape_str({M, N}));
    op.c = in.f32("c", false);
  }
  if (in.find("bias")) {
    if (in.shape("bias") != Shape{N}) in.fail("bias", "has shape " + shape_str(in.shape("bias")) + ", expected [N] = " + shape_str({N}));
    op.bias = in.f32("bias", false);
  }
  return op;
}

void run_matmul(const MatmulArgs& a) {
  const auto pid = parse_profile(a.profile);
  if (!pid) throw UsageError("--profile: '" + a.profile + "' is not one of trn2 trn3 ocp hopper fp32");
  if (a.out_dtype != "f32" && a.out_dtype != "bf16") throw UsageError("--out-dtype: '" + a.out_dtype + "' is not one of f32 bf16");
  if (a.threads < 1) throw UsageError("--threads: must be at least 1, got " + std::to_string(a.threads));
  const std::optional<CRole> c_role = parse_c_role(a.c_role);
  if (!c_role) throw UsageError("--c-role: '" + a.c_role + "' is not one of epilogue accumulator");
  std::optional<AccumulationModel> model;
  if (!a.model.empty()) {
    try {
      model = parse_model(a.model);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--model: ") + e.what());
    }
    if (!model)
      throw UsageError("--model: '" + a.model +
                       "' is not a model (fp32_sequential, exact_block:B, systolic:T, fused:n:f:rtz|rne[:promoteP], "
                       "trainium3_mx:wrapx|1x32)");
  }
  std::error_code ec;
  if (std::filesystem::equivalent(a.in, a.out, ec))
    throw UsageError("output '" + a.out + "' is the input file; the input is never modified");

  const Input in(a.in);
  const Operands op = load(in);
  if (*c_role == CRole::kAccumulator && op.c.empty())
    throw UsageError("--c-role accumulator: input '" + a.in + "' has no tensor 'c' (the accumulator input, [M, N] F32)");
  const GemmArgs g = op.args(*c_role);
  // the profile's and the GEMM's checks speak of operands a and b: say which file, and which
  // tensor of it b is
  const std::string b_name = in.find("b") != nullptr ? "b" : "bt (transposed)";
  auto with_context = [&](auto&& fn) {
    try {
      return fn();
    } catch (const std::invalid_argument& e) {
      throw UsageError("input '" + a.in + "' (b is its " + b_name + "): " + e.what());
    }
  };
  const GemmOptions o = with_context([&] { return gemm_options(device_profile(*pid), g, model, a.threads); });

  const bool bf16 = a.out_dtype == "bf16";
  std::vector<float> d32;
  std::vector<std::uint16_t> d16;
  std::span<const std::byte> bytes;
  if (bf16) {
    d16.resize(op.m * op.n);
    with_context([&] { gemm(g, o, std::span<std::uint16_t>(d16)); });
    bytes = std::as_bytes(std::span(d16));
  } else {
    d32.resize(op.m * op.n);
    with_context([&] { gemm(g, o, std::span<float>(d32)); });
    bytes = std::as_bytes(std::span(d32));
  }
  const ck::TensorData d{{"d", bf16 ? ck::DType::kBF16 : ck::DType::kF32, {op.m, op.n}}, bytes};
  std::map<std::string, std::string> meta = {{"fp8q.profile", a.profile}, {"fp8q.model", model_name(o.model)}};
  if (!op.c.empty()) meta["fp8q.c_role"] = std::string(c_role_name(*c_role));
  ck::write_file(a.out, std::span(&d, 1), meta);
}

}  // namespace

void add_matmul(CLI::App& app) {
  auto m = std::make_shared<MatmulArgs>();
  auto* c = app.add_subcommand("matmul", "Quantized matmul D = epilogue(A x B) as a device computes it, bit for bit");
  c->add_option("IN", m->in, "Input .safetensors: a, b (or bt), optional scales, c, bias")->required()->check(safetensors_path());
  c->add_option("OUT", m->out, "Output .safetensors (tensor d)")->required()->check(safetensors_path());
  c->add_option("--profile", m->profile, "Device: trn2 trn3 ocp hopper fp32")->required();
  c->add_option("--model", m->model, "Override the accumulation model, e.g. fused:32:13:rtz, systolic:128, exact_block:32");
  c->add_option("--out-dtype", m->out_dtype, "Output dtype: f32 bf16")->capture_default_str();
  c->add_option("--threads", m->threads, "Worker threads (results do not depend on it)")->capture_default_str();
  c->add_option("--c-role", m->c_role,
                "What c is: epilogue (D = scales * (A x B) + c, a GEMM's beta C) or accumulator (the "
                "model's accumulator starts at c, as an MMA instruction's D = A B + C; c is in the "
                "accumulator's units, before the dequantization multiply)")
      ->capture_default_str();
  c->callback([m] { run_matmul(*m); });
}

}  // namespace fp8q::cli
