// fp8q quantize-tensors IN OUT --granularity G [--elem F] [--scale-rule R] [--apply multiply|divide]
//                       [--pow2] [--margin N] [--round M] [--seed N] [--overflow P] [--threads N]
// fp8q dequantize-tensors IN OUT [--dtype orig|f32|bf16|f16] [--threads N]
// The quant layer on safetensors files; the contract is docs/tensors.md. Tensors are read
// memory-mapped and quantized one at a time; OUT appears only when complete.
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "args.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

namespace ck = fp8q::checkpoint;

ck::DType code_dtype(FormatId id) {
  if (id == FormatId::kE4M3FN) return ck::DType::kF8_E4M3;
  if (id == FormatId::kE5M2) return ck::DType::kF8_E5M2;
  return ck::DType::kU8;
}

// MX and NVFP4 store their scales as codes (`.scale`), the other schemes fp32 multipliers.
std::string scale_name(const std::string& name, bool coded) { return name + (coded ? ".scale" : ".scale_inv"); }
std::string global_scale_name(const std::string& name) { return name + ".global_scale"; }
bool is_nvfp4(const Granularity& g) { return g.kind == GranularityKind::kNvfp4; }
ck::DType scale_dtype(const Granularity& g) {
  return g.kind == GranularityKind::kMx ? ck::DType::kU8 : is_nvfp4(g) ? ck::DType::kF8_E4M3 : ck::DType::kF32;
}

// Shape of the codes (e2m1: two per byte along the last axis) and of the scale tensor.
std::vector<std::uint64_t> code_shape(std::vector<std::uint64_t> shape, FormatId id) {
  if (id == FormatId::kE2M1 && !shape.empty()) shape.back() /= 2;
  return shape;
}
std::vector<std::uint64_t> scale_shape(const std::vector<std::uint64_t>& shape, const Granularity& g) {
  const MatrixShape m = matrix_shape(shape);
  const BlockGrid grid = block_grid(g, m);
  switch (g.kind) {
    case GranularityKind::kTensor: return {1};
    case GranularityKind::kMx: {
      if (shape.empty()) return {1};
      std::vector<std::uint64_t> s(shape.begin(), shape.end() - 1);
      s.push_back(grid.grid_cols());
      return s;
    }
    default: return {grid.grid_rows(), grid.grid_cols()};
  }
}

void refuse_same_file(const std::string& in, const std::string& out) {
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec))
    throw UsageError("output '" + out + "' is the input file; the input is never modified");
}

// ---- quantize-tensors -------------------------------------------------------------------------
struct QuantizeArgs {
  std::string in, out, scheme, elem = "e4m3fn", rule, apply, round = "rne", overflow = "saturate";
  bool pow2 = false;
  int margin = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  CLI::Option* margin_opt = nullptr;
};

QuantizeOptions quantize_options(const QuantizeArgs& a) {
  QuantizeOptions o;
  if (a.scheme.empty()) throw UsageError("--granularity is required (tensor row col block<R>x<C> mx nvfp4 nvfp4_16x16)");
  const auto g = parse_granularity(a.scheme);
  if (!g || *g == Granularity::mx_column() || *g == Granularity::nvfp4_column())
    throw UsageError("--granularity: '" + a.scheme + "' is not one of tensor row col block<R>x<C> mx nvfp4 nvfp4_16x16");
  o.granularity = *g;
  const Format& elem = format_arg(a.elem, "--elem");
  if (elem.bits() > 8 || !elem.is_signed || !elem.has_zero())
    throw UsageError("--elem: " + a.elem + " cannot hold quantized elements (e8m0 and wide formats are not element formats)");
  o.element = *parse_format(a.elem);  // format_arg() accepted the name
  const bool mx = g->kind == GranularityKind::kMx;
  if (is_nvfp4(*g) && o.element != FormatId::kE2M1)
    throw UsageError("--elem: --granularity " + a.scheme + " scales e2m1 elements (--elem e2m1), not " + a.elem);
  if (is_nvfp4(*g) && (!a.apply.empty() || a.pow2 || a.margin_opt->count() > 0))
    throw UsageError("--apply, --pow2 and --margin do not apply to --granularity " + a.scheme + " (its scales are NVFP4's)");
  if (!a.rule.empty()) {
    if (!mx) throw UsageError("--scale-rule applies to --granularity mx only");
    const auto r = parse_mx_scale_rule(a.rule);
    if (!r)
      throw UsageError("--scale-rule: '" + a.rule + "' is not one of floor ceil even rceil trainium3 compressed-tensors");
    o.mx_rule = *r;
  }
  if (mx && (!a.apply.empty() || a.pow2 || a.margin_opt->count() > 0))
    throw UsageError("--apply, --pow2 and --margin do not apply to --granularity mx (its scales are E8M0 powers of two)");
  if (!a.apply.empty()) {
    if (a.apply != "multiply" && a.apply != "divide")
      throw UsageError("--apply: '" + a.apply + "' is not one of multiply divide");
    o.apply = a.apply == "divide" ? ScaleOp::kDivide : ScaleOp::kMultiply;
  }
  o.amax.power_of_two = a.pow2;
  if (a.margin < -127 || a.margin > 127) throw UsageError("--margin: must be in [-127, 127], got " + std::to_string(a.margin));
  o.amax.margin = a.margin;
  o.convert.rounding = rounding_arg(a.round);
  o.convert.overflow = overflow_arg(a.overflow);
  o.convert.seed = a.seed;
  if (a.threads < 1) throw UsageError("--threads: must be at least 1, got " + std::to_string(a.threads));
  o.bulk.threads = a.threads;
  return o;
}

void run_quantize(const QuantizeArgs& a) {
  const QuantizeOptions o = quantize_options(a);
  const bool mx = o.granularity.kind == GranularityKind::kMx, nvfp4 = is_nvfp4(o.granularity);
  refuse_same_file(a.in, a.out);
  const ck::Reader in(a.in);

  // Declare every output tensor first: the header leads the file.
  std::vector<ck::TensorSpec> specs;
  // the input's own metadata, less fp8q's keys: stale ones (a file quantized before) would
  // sit beside the new scheme and make the output unreadable to dequantize-tensors
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : in.metadata())
    if (!k.starts_with("fp8q.")) meta.emplace(k, v);
  std::map<std::string, std::string> owner;  // output name -> the input tensor it comes from
  auto declare = [&](ck::TensorSpec s, const std::string& from) {
    const auto [it, fresh] = owner.emplace(s.name, from);
    if (!fresh)
      throw UsageError("input '" + a.in + "': output tensor '" + s.name + "' would be written for both '" +
                       it->second + "' and '" + from + "'");
    specs.push_back(std::move(s));
  };
  for (const ck::TensorInfo& t : in.tensors()) {
    if (ck::floating_format(t.dtype) == nullptr) {
      declare({t.name, t.dtype, t.shape}, t.name);
      continue;
    }
    if (o.element == FormatId::kE2M1 && (t.shape.empty() || t.shape.back() % 2 != 0))
      throw UsageError("tensor '" + t.name + "': e2m1 packs two codes per byte along the last axis, so the last "
                       "dimension must be even; it is " +
                       (t.shape.empty() ? std::string("absent (0-D tensor)") : std::to_string(t.shape.back())));
    declare({t.name, code_dtype(o.element), code_shape(t.shape, o.element)}, t.name);
    declare({scale_name(t.name, mx || nvfp4), scale_dtype(o.granularity), scale_shape(t.shape, o.granularity)},
            t.name);
    if (nvfp4) declare({global_scale_name(t.name), ck::DType::kF32, {1}}, t.name);
    meta["fp8q.dtype." + t.name] = std::string(ck::dtype_name(t.dtype));
  }
  meta["fp8q.scheme"] = granularity_name(o.granularity);
  meta["fp8q.elem"] = std::string(format_of(o.element).name);
  if (mx) {
    meta["fp8q.scale_rule"] = std::string(mx_scale_rule_name(o.mx_rule));
  } else if (!nvfp4) {
    meta["fp8q.apply"] = o.apply == ScaleOp::kDivide ? "divide" : "multiply";
  }
  meta["fp8q.round"] = std::string(rounding_name(o.convert.rounding));
  meta["fp8q.overflow"] = std::string(overflow_name(o.convert.overflow));

  ck::Writer out(a.out, specs, meta);
  for (const ck::TensorInfo& t : in.tensors()) {
    const Format* from = ck::floating_format(t.dtype);
    if (from == nullptr) {
      out.write(in.bytes(t));
      continue;
    }
    QuantizedTensor q;
    try {
      q = quantize(in.bytes(t), *from, t.shape, o);
    } catch (const NanError& e) {
      throw UsageError("tensor '" + t.name + "': " + e.what());
    } catch (const std::invalid_argument& e) {
      throw UsageError("tensor '" + t.name + "': " + e.what());
    }
    out.write(std::as_bytes(std::span(q.codes)));
    if (mx || nvfp4) {
      out.write(std::as_bytes(std::span(q.scales)));
    } else {
      out.write(std::as_bytes(std::span(q.scale_inv)));
    }
    if (nvfp4) out.write(std::as_bytes(std::span(&q.global_scale, 1)));
  }
  out.commit();
}

// ---- dequantize-tensors -----------------------------------------------------------------------
struct DequantizeArgs {
  std::string in, out, dtype = "orig";
  int threads = 1;
};

std::string meta_value(const ck::Reader& in, const std::string& key) {
  const auto it = in.metadata().find(key);
  if (it == in.metadata().end())
    throw UsageError("input '" + in.path().string() + "': __metadata__ has no '" + key +
                     "' (not written by fp8q quantize-tensors?)");
  return it->second;
}

void run_dequantize(const DequantizeArgs& a) {
  if (a.dtype != "orig" && a.dtype != "f32" && a.dtype != "bf16" && a.dtype != "f16")
    throw UsageError("--dtype: '" + a.dtype + "' is not one of orig f32 bf16 f16");
  if (a.threads < 1) throw UsageError("--threads: must be at least 1, got " + std::to_string(a.threads));
  refuse_same_file(a.in, a.out);
  const ck::Reader in(a.in);
  const std::string where = "input '" + a.in + "': ";
  const auto g = parse_granularity(meta_value(in, "fp8q.scheme"));
  if (!g) throw UsageError(where + "fp8q.scheme '" + meta_value(in, "fp8q.scheme") + "' is not a scheme");
  const auto elem = parse_format(meta_value(in, "fp8q.elem"));
  if (!elem) throw UsageError(where + "fp8q.elem '" + meta_value(in, "fp8q.elem") + "' is not a format");
  const bool mx = g->kind == GranularityKind::kMx, nvfp4 = is_nvfp4(*g);

  struct Item {
    const ck::TensorInfo* codes;
    const ck::TensorInfo* scale;
    const ck::TensorInfo* global;  // NVFP4's; else nullptr
    const Format* to;
    ck::DType dtype;
    std::vector<std::uint64_t> shape;
  };
  std::map<std::string, Item> items;  // by tensor name
  std::set<std::string> consumed;     // scale tensors
  for (const auto& [key, value] : in.metadata()) {
    if (!key.starts_with("fp8q.dtype.")) continue;
    const std::string name = key.substr(11);
    const ck::TensorInfo* c = in.find(name);
    const ck::TensorInfo* s = in.find(scale_name(name, mx || nvfp4));
    if (c == nullptr || s == nullptr)
      throw UsageError(where + "tensor '" + name + "' or its scale '" + scale_name(name, mx || nvfp4) + "' is missing");
    const ck::TensorInfo* global = nvfp4 ? in.find(global_scale_name(name)) : nullptr;
    if (nvfp4 && (global == nullptr || global->dtype != ck::DType::kF32 || global->shape != std::vector<std::uint64_t>{1}))
      throw UsageError(where + "tensor '" + name + "' needs its global scale '" + global_scale_name(name) +
                       "', F32 of shape [1]");
    const auto orig = ck::parse_dtype(value);
    if (!orig || ck::floating_format(*orig) == nullptr)
      throw UsageError(where + key + " = '" + value + "' is not F32, BF16 or F16");
    if (c->dtype != code_dtype(*elem))
      throw UsageError(where + "tensor '" + name + "' has dtype " + std::string(ck::dtype_name(c->dtype)) + ", " +
                       std::string(format_of(*elem).name) + " codes are " + std::string(ck::dtype_name(code_dtype(*elem))));
    std::vector<std::uint64_t> shape = c->shape;
    if (*elem == FormatId::kE2M1) {
      if (shape.empty()) throw UsageError(where + "tensor '" + name + "': packed e2m1 codes cannot be 0-D");
      shape.back() *= 2;
    }
    const auto want = scale_shape(shape, *g);
    if (s->shape != want || s->dtype != scale_dtype(*g))
      throw UsageError(where + "scale tensor '" + s->name + "' does not have the dtype and shape the scheme " +
                       granularity_name(*g) + " gives tensor '" + name + "'");
    const ck::DType out_dtype = a.dtype == "orig" ? *orig
                                : a.dtype == "f32" ? ck::DType::kF32
                                : a.dtype == "bf16" ? ck::DType::kBF16
                                                    : ck::DType::kF16;
    items[name] = {c, s, global, ck::floating_format(out_dtype), out_dtype, shape};
    consumed.insert(s->name);
    if (global != nullptr) consumed.insert(global->name);
  }
  // a tensor that is both quantized data and another tensor's scale would be dropped
  for (const auto& [name, item] : items)
    if (consumed.count(name) != 0)
      throw UsageError(where + "tensor '" + name + "' is listed as quantized (fp8q.dtype." + name +
                       ") and is also the scale of another tensor");

  std::vector<ck::TensorSpec> specs;
  for (const ck::TensorInfo& t : in.tensors()) {
    if (consumed.count(t.name) != 0) continue;
    const auto it = items.find(t.name);
    if (it == items.end()) {
      specs.push_back({t.name, t.dtype, t.shape});
    } else {
      specs.push_back({t.name, it->second.dtype, it->second.shape});
    }
  }
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : in.metadata())
    if (!k.starts_with("fp8q.")) meta[k] = v;

  ck::Writer out(a.out, specs, meta);
  for (const ck::TensorInfo& t : in.tensors()) {
    if (consumed.count(t.name) != 0) continue;
    const auto it = items.find(t.name);
    if (it == items.end()) {
      out.write(in.bytes(t));
      continue;
    }
    const Item& item = it->second;
    QuantizedTensor q;
    q.element = *elem;
    q.shape = item.shape;
    q.granularity = *g;
    q.grid = block_grid(*g, matrix_shape(item.shape));
    const auto codes = in.bytes(*item.codes);
    q.codes.resize(codes.size());
    std::memcpy(q.codes.data(), codes.data(), codes.size());
    const auto scales = in.bytes(*item.scale);
    if (mx || nvfp4) {
      q.scales.resize(scales.size());
      std::memcpy(q.scales.data(), scales.data(), scales.size());
    } else {
      q.scale_inv.resize(scales.size() / 4);
      std::memcpy(q.scale_inv.data(), scales.data(), scales.size());
    }
    if (item.global != nullptr) std::memcpy(&q.global_scale, in.bytes(*item.global).data(), sizeof q.global_scale);
    std::vector<std::byte> values(q.numel() * static_cast<std::size_t>(item.to->storage_bytes()));
    try {
      dequantize(q, values, *item.to, a.threads);
    } catch (const std::invalid_argument& e) {
      throw UsageError(where + "tensor '" + t.name + "': " + e.what());
    }
    out.write(values);
  }
  out.commit();
}

}  // namespace

void add_tensors(CLI::App& app) {
  auto q = std::make_shared<QuantizeArgs>();
  auto* qc = app.add_subcommand("quantize-tensors",
                                "Quantize every F32/BF16/F16 tensor of a safetensors file (docs/tensors.md)");
  qc->add_option("IN", q->in, "Input .safetensors")->required()->check(safetensors_path());
  qc->add_option("OUT", q->out, "Output .safetensors")->required()->check(safetensors_path());
  auto* g = qc->add_option("--granularity", q->scheme, "Which elements share a scale: tensor row col block1x128 block128x128 block<R>x<C> mx nvfp4 nvfp4_16x16 (required)");
  qc->add_option("--scheme", q->scheme, "Alias of --granularity (its former name)")->excludes(g);
  qc->add_option("--elem", q->elem, "Element format: e4m3fn e4m3 e5m2 e4m3fnuz e5m2fnuz e3m4 e2m3 e3m2 e2m1")
      ->capture_default_str();
  qc->add_option("--scale-rule", q->rule, "MX scale rule: floor ceil even rceil trainium3 compressed-tensors (default floor)");
  qc->add_option("--apply", q->apply, "How the scale enters: multiply (x * scale) or divide (x / scale_inv)");
  qc->add_flag("--pow2", q->pow2, "Round scales to powers of two");
  q->margin_opt = qc->add_option("--margin", q->margin, "Scale divided by 2^margin (headroom)");
  qc->add_option("--round", q->round, "Rounding: rne rna rtz rup rdn rto sr")->capture_default_str();
  qc->add_option("--seed", q->seed, "Stochastic rounding: Philox key")->capture_default_str()->check(not_negative());
  qc->add_option("--overflow", q->overflow, "Overflow: saturate inf-nan")->capture_default_str();
  qc->add_option("--threads", q->threads, "Worker threads (results do not depend on it)")->capture_default_str();
  qc->callback([q] { run_quantize(*q); });

  auto d = std::make_shared<DequantizeArgs>();
  auto* dc = app.add_subcommand("dequantize-tensors", "Turn the output of quantize-tensors back into floating point");
  dc->add_option("IN", d->in, "Input .safetensors (written by quantize-tensors)")->required()->check(safetensors_path());
  dc->add_option("OUT", d->out, "Output .safetensors")->required()->check(safetensors_path());
  dc->add_option("--dtype", d->dtype, "Output dtype: orig f32 bf16 f16")->capture_default_str();
  dc->add_option("--threads", d->threads, "Worker threads")->capture_default_str();
  dc->callback([d] { run_dequantize(*d); });
}

}  // namespace fp8q::cli
