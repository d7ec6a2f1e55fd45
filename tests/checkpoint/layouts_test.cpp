// Each checkpoint layout end to end through quantize_checkpoint(): every output tensor's key,
// dtype and shape as the layout's public definition gives them, config.json's
// quantization_config, the stored codes dequantized here (from the raw bytes, not through the
// layout's read_back) within the rounding bound, the scale rule of each layout recomputed
// independently, kept tensors bit for bit, thread-count byte identity, sharding.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/trainium3_layout.hpp"
#include "quantize_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::HostTensor;
using testing::ScratchDir;
using Json = nlohmann::json;

struct Case {
  std::string name;  // test name
  std::string layout;
  std::optional<Granularity> granularity;
  std::optional<trn3::KLayout> pack;
  std::optional<FormatId> element{};  // trn3-mx: e2m1 for MXFP4
};

std::string case_name(const ::testing::TestParamInfo<Case>& i) { return i.param.name; }

// Input value i of a stored tensor, as float.
float value(const HostTensor& t, std::size_t i) {
  const std::size_t w = dtype_bytes(t.dtype);
  std::uint32_t bits = 0;
  std::memcpy(&bits, t.bytes.data() + i * w, w);
  if (t.dtype == DType::kF32) return float_of(bits);
  return decode_f32(bits, t.dtype == DType::kBF16 ? kBF16 : kF16);
}

float stored_scale(const Model& m, const std::string& name, std::size_t i) {
  const ModelTensor* t = m.find(name);
  const auto b = m.bytes(*t);
  const std::size_t w = dtype_bytes(t->info->dtype);
  std::uint32_t bits = 0;
  std::memcpy(&bits, b.data() + i * w, w);
  switch (t->info->dtype) {
    case DType::kF32: return float_of(bits);
    case DType::kBF16: return decode_f32(bits, kBF16);
    case DType::kF16: return decode_f32(bits, kF16);
    case DType::kU8: return bits == 0 ? float_of(0x00400000u) : float_of(bits << 23);  // E8M0
    default: throw std::logic_error("scale dtype");
  }
}

// The fields of compressed-tensors' QuantizationArgs, which forbids any other key
// (model_config = ConfigDict(extra="forbid")), read from the released wheels'
// compressed_tensors/quantization/quant_args.py. ct-fp8 must load with 0.12.2; ct-mxfp8 needs
// 0.15.0 (the first release with the mxfp8-quantized format) and its scale_dtype.
const std::set<std::string> kQuantizationArgs_0_12_2 = {"num_bits", "type",     "symmetric", "group_size",
                                                        "strategy", "block_structure", "dynamic", "actorder",
                                                        "observer", "observer_kwargs"};
const std::set<std::string> kQuantizationArgs_0_15_0 = {
    "num_bits", "type", "symmetric", "group_size", "strategy", "block_structure", "dynamic", "actorder",
    "scale_dtype", "zp_dtype", "observer", "observer_kwargs"};

std::set<std::string> keys(const Json& object) {
  std::set<std::string> k;
  for (const auto& [key, v] : object.items()) k.insert(key);
  return k;
}

bool includes(const std::set<std::string>& all, const std::set<std::string>& part) {
  return std::includes(all.begin(), all.end(), part.begin(), part.end());
}

int floor_log2(float a) {
  int e;
  std::frexp(a, &e);
  return e - 1;
}

class LayoutTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    model_ = testing::small_model();
    // the one weight of whole 128 x 128 blocks (the block layouts keep the others)
    model_.push_back(testing::make_tensor("model.layers.0.self_attn.k_proj.weight", DType::kBF16, {256, 384},
                                          testing::random_values(256 * 384, 11)));
    std::filesystem::create_directory(dir_ / "in");
    testing::write_model_file(dir_ / "in" / "model.safetensors", model_);
    testing::write_config(dir_ / "in");
    std::ofstream(dir_ / "in" / "tokenizer.json") << "{\"t\": 1}";
  }
  QuantizeCheckpointOptions options(int threads = 1) const {
    QuantizeCheckpointOptions o;
    o.layout = GetParam().layout;
    o.layout_options.granularity = GetParam().granularity;
    o.layout_options.pack = GetParam().pack;
    o.layout_options.element = GetParam().element;
    o.layout_options.threads = threads;
    return o;
  }
  bool mx() const { return GetParam().layout == "ct-mxfp8" || GetParam().layout == "trn3-mx"; }
  bool fp4() const { return GetParam().element == FormatId::kE2M1; }  // trn3-mx's MXFP4: two codes a byte
  bool blocks() const {
    return GetParam().layout == "hf-fp8" || GetParam().granularity == Granularity::block(128, 128);
  }
  // Which weights the layout quantizes in model_.
  bool expect_quantized(const std::string& name) const {
    static const std::set<std::string> linear = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.down_proj.weight"};
    if (name == "model.layers.0.self_attn.k_proj.weight") return true;
    if (blocks()) return false;  // a dimension of 160 or 300
    if (GetParam().layout == "ct-mxfp8" && name == "model.layers.0.mlp.down_proj.weight") return false;  // 300 % 32
    return linear.count(name) != 0;
  }

  ScratchDir dir_;
  std::vector<HostTensor> model_;
};

TEST_P(LayoutTest, MatchesItsDefinitionAndDequantizes) {
  const Case& c = GetParam();
  if (c.layout == "ct-nvfp4" || c.layout == "ct-mxfp4")
    GTEST_SKIP() << "packed FP4: CtNvfp4Layout / CtMxfp4Layout.MatchesItsDefinition";
  const auto result = quantize_checkpoint(dir_ / "in", dir_ / "out", options());
  const Model out = Model::open(dir_ / "out");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "out" / "tokenizer.json"));
  // Nothing else beside the output: the staging directory is gone.
  EXPECT_EQ(dir_.entries(), (std::vector<std::string>{"in", "out"}));

  std::set<std::string> expected_names;
  const std::string scale_suffix = c.layout == "hf-fp8" ? ".weight_scale_inv" : ".weight_scale";
  const Granularity granularity = c.granularity.value_or(c.layout == "hf-fp8" ? Granularity::block(128, 128) : Granularity::row());
  for (const HostTensor& t : model_) {
    SCOPED_TRACE(t.name);
    if (!expect_quantized(t.name)) {
      // kept: same name, dtype, shape and bytes
      const ModelTensor* o = out.find(t.name);
      ASSERT_NE(o, nullptr);
      EXPECT_EQ(o->info->dtype, t.dtype);
      EXPECT_EQ(o->info->shape, t.shape);
      const auto b = out.bytes(*o);
      ASSERT_EQ(b.size(), t.bytes.size());
      EXPECT_EQ(std::memcmp(b.data(), t.bytes.data(), b.size()), 0);
      expected_names.insert(t.name);
      continue;
    }
    const std::size_t rows = t.shape[0], cols = t.shape[1];
    const std::string module = t.name.substr(0, t.name.size() - 7);
    const ModelTensor* q = out.find(t.name);
    const ModelTensor* s = out.find(module + scale_suffix);
    ASSERT_NE(q, nullptr);
    ASSERT_NE(s, nullptr);
    expected_names.insert(t.name);
    expected_names.insert(module + scale_suffix);
    EXPECT_EQ(q->info->dtype, fp4() ? DType::kU8 : DType::kF8_E4M3);
    // ---- shapes and dtypes of the definition ----
    std::vector<std::uint64_t> want_scale;
    DType want_scale_dtype = DType::kF32;
    const std::uint64_t tiles = (cols + 511) / 512;
    if (mx()) {
      want_scale_dtype = DType::kU8;
      if (c.pack) {
        const std::uint64_t x4 = fp4() ? 2 : 4;
        EXPECT_EQ(q->info->shape, (std::vector<std::uint64_t>{128, tiles, rows, x4}));
        want_scale = {128, tiles, rows};
      } else {
        const std::vector<std::uint64_t> halved{rows, cols / 2};
        EXPECT_EQ(q->info->shape, fp4() ? halved : t.shape);
        want_scale = {rows, (cols + 31) / 32};
      }
    } else {
      EXPECT_EQ(q->info->shape, t.shape);
      if (c.layout == "ct-fp8") want_scale_dtype = t.dtype;  // compressed-tensors: the weight's dtype
      switch (granularity.kind) {
        case GranularityKind::kTensor: want_scale = {1}; break;
        case GranularityKind::kRow: want_scale = {rows, 1}; break;
        default: want_scale = {(rows + 127) / 128, (cols + 127) / 128}; break;
      }
    }
    EXPECT_EQ(s->info->shape, want_scale);
    EXPECT_EQ(s->info->dtype, want_scale_dtype);

    // ---- dequantize from the raw bytes and bound the error; recompute the scale rule ----
    const Format& elem = c.layout == "trn2" ? kE4M3 : fp4() ? kE2M1 : kE4M3FN;
    const auto codes = out.bytes(*q);
    std::map<std::size_t, float> amax;  // per scale index
    std::map<std::size_t, std::size_t> scale_index;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t k = 0; k < cols; ++k) {
        std::size_t code_at, si;
        if (c.pack) {
          const auto slot = trn3::onchip_slot(*c.pack, k);
          code_at = ((slot.partition * tiles + slot.tile) * rows + r) * 4 + slot.slot;
          const std::size_t g = trn3::mx_block_of_k(*c.pack, k) % 16;
          si = (trn3::scale_partition(g) * tiles + slot.tile) * rows + r;
        } else {
          code_at = r * cols + k;
          if (mx()) {
            si = r * ((cols + 31) / 32) + k / 32;
          } else {
            si = granularity == Granularity::tensor() ? 0 : granularity == Granularity::row() ? r : (r / 128) * ((cols + 127) / 128) + k / 128;
          }
        }
        const float x = value(t, r * cols + k);
        const float sc = stored_scale(out, module + scale_suffix, si);
        // fp4: code i is nibble i % 2 of byte i / 2 (x4 containers are 2 bytes, little-endian)
        const unsigned byte = std::to_integer<unsigned>(codes[fp4() ? code_at / 2 : code_at]);
        const unsigned code = fp4() ? (code_at % 2 == 0 ? byte & 0xF : byte >> 4) : byte;
        const float xh = decode_f32(code, elem) * sc;
        // half an ulp of the element format, relative, and half its smallest subnormal
        const double bound = fp4() ? std::ldexp(std::fabs(x), -2) + std::ldexp(sc, -2) + 1e-6 * std::fabs(x)
                                   : std::ldexp(std::fabs(x), -4) + std::ldexp(sc, -10) + 1e-6 * std::fabs(x);
        ASSERT_LE(std::fabs(static_cast<double>(x) - xh), bound) << "row " << r << " col " << k;
        amax[si] = std::max(amax[si], std::fabs(x));
      }
    for (const auto& [si, a] : amax) {
      const float sc = stored_scale(out, module + scale_suffix, si);
      if (c.layout == "hf-fp8" || c.layout == "trn2") {
        const double max = c.layout == "trn2" ? 240.0 : 448.0;
        EXPECT_EQ(sc, static_cast<float>(a / max)) << "scale " << si;  // fp32(amax / max)
      } else if (c.layout == "ct-fp8") {
        // the smallest value of the weight's dtype >= amax / 448
        EXPECT_GE(static_cast<double>(sc), a / 448.0 * (1 - 1e-7));
        const Format& f = t.dtype == DType::kF32 ? kF32 : t.dtype == DType::kBF16 ? kBF16 : kF16;
        EXPECT_EQ(decode_f32(encode_f32(sc, f), f), sc) << "scale is exact in the dtype";
        if (t.dtype != DType::kF32) {
          const std::uint64_t below = encode_f32(sc, f) - 1;
          EXPECT_LT(static_cast<double>(decode_f32(below, f)), a / 448.0);
        }
      } else if (c.layout == "ct-mxfp8") {
        // compressed-tensors: amax rounded to a power of two (up from 1.75 * 2^k), minus 8
        int k = floor_log2(a);
        if (a / std::ldexp(1.0, k) >= 1.75) ++k;
        EXPECT_EQ(sc, std::ldexp(1.0f, k - 8)) << "group " << si;
      } else {
        // trainium3 rule: floor(log2 amax) - (emax - 1), emax 8 (e4m3fn) or 2 (e2m1)
        EXPECT_EQ(sc, std::ldexp(1.0f, floor_log2(a) - (fp4() ? 1 : 7))) << "group " << si;
      }
    }
  }
  std::set<std::string> got;
  for (const auto& t : out.tensors()) got.insert(t.info->name);
  EXPECT_EQ(got, expected_names);

  // ---- the report ----
  for (const auto& r : result.tensors) {
    EXPECT_EQ(r.quantized, expect_quantized(r.name)) << r.name;
    if (blocks() && r.name == "model.layers.0.mlp.gate_proj.weight")
      EXPECT_EQ(r.reason, "out_features 300 and in_features 160 are not multiples of 128 (the loaders misread a partial "
                          "128x128 block)");
    if (r.quantized) {
      EXPECT_GT(r.stats.sqnr_db(), fp4() ? 12.0 : 25.0) << r.name;
      EXPECT_EQ(r.stats.saturated, 0u) << r.name;
    }
  }
  const auto v = verify_checkpoint(dir_ / "out", dir_ / "in", 2);
  EXPECT_TRUE(v.problems.empty()) << (v.problems.empty() ? "" : v.problems.front());
  EXPECT_EQ(v.layout, c.layout);
  EXPECT_EQ(v.summary.quantized, result.summary.quantized);
  EXPECT_EQ(v.summary.stats.sum_sq_error, result.summary.stats.sum_sq_error);

  // ---- config.json ----
  const Json config = Json::parse(testing::read_raw(dir_ / "out" / "config.json"));
  EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");  // the input's config kept
  const Json& qc = config["quantization_config"];
  // every kept 2-D weight, the embedding too (a name cannot tell an Embedding from a Linear)
  std::vector<std::string> kept_linear = {"lm_head", "model.embed_tokens", "model.layers.0.mlp.gate"};
  if (c.layout == "ct-mxfp8") kept_linear.insert(kept_linear.begin() + 2, "model.layers.0.mlp.down_proj");
  if (blocks())
    kept_linear = {"lm_head", "model.embed_tokens", "model.layers.0.mlp.down_proj", "model.layers.0.mlp.gate",
                   "model.layers.0.mlp.gate_proj", "model.layers.0.self_attn.o_proj", "model.layers.0.self_attn.q_proj"};
  if (c.layout == "hf-fp8") {
    EXPECT_EQ(qc["quant_method"], "fp8");
    EXPECT_EQ(qc["fmt"], "e4m3");
    EXPECT_EQ(qc["activation_scheme"], "dynamic");
    EXPECT_EQ(qc["weight_block_size"], Json::array({128, 128}));
    EXPECT_EQ(qc["modules_to_not_convert"].get<std::vector<std::string>>(), kept_linear);
  } else if (c.layout.starts_with("ct-")) {
    const std::string format = c.layout == "ct-fp8" ? "float-quantized" : "mxfp8-quantized";
    EXPECT_EQ(qc["quant_method"], "compressed-tensors");
    EXPECT_EQ(qc["format"], format);
    EXPECT_EQ(qc["quantization_status"], "compressed");
    EXPECT_EQ(qc["ignore"].get<std::vector<std::string>>(), kept_linear);
    const Json& g = qc["config_groups"]["group_0"];
    EXPECT_EQ(g["targets"], Json::array({"Linear"}));
    EXPECT_EQ(g["format"], format);
    const Json& w = g["weights"];
    const auto& accepted = c.layout == "ct-fp8" ? kQuantizationArgs_0_12_2 : kQuantizationArgs_0_15_0;
    EXPECT_TRUE(includes(accepted, keys(w))) << w.dump();
    EXPECT_TRUE(includes(accepted, keys(g["input_activations"]))) << g["input_activations"].dump();
    EXPECT_EQ(qc["version"], c.layout == "ct-fp8" ? "0.13.0" : "0.15.0");
    EXPECT_EQ(w["num_bits"], 8);
    EXPECT_EQ(w["type"], "float");
    EXPECT_EQ(w["symmetric"], true);
    EXPECT_EQ(w["dynamic"], false);
    if (c.layout == "ct-mxfp8") {
      EXPECT_EQ(w["strategy"], "group");
      EXPECT_EQ(w["group_size"], 32);
      EXPECT_EQ(w["scale_dtype"], "torch.uint8");
    } else {
      EXPECT_EQ(w["strategy"], std::string(ct_strategy(granularity)));
      if (granularity == Granularity::block(128, 128)) EXPECT_EQ(w["block_structure"], Json::array({128, 128}));
      else EXPECT_TRUE(w["block_structure"].is_null());
      EXPECT_EQ(g["input_activations"]["dynamic"], true);
    }
  } else {
    EXPECT_EQ(qc["quant_method"], "fp8q");
    EXPECT_EQ(qc["layout"], c.layout);
    EXPECT_EQ(qc["fmt"], c.layout == "trn2" ? "e4m3" : fp4() ? "e2m1" : "e4m3fn");
    if (c.layout == "trn2") EXPECT_EQ(qc["fp8_max"], 240);
    if (c.layout == "trn3-mx") EXPECT_EQ(qc["packing"], c.pack ? std::string(trn3::k_layout_name(*c.pack)) : "none");
    if (c.layout == "trn3-mx" && c.pack) {
      EXPECT_EQ(qc["in_features"]["model.layers.0.mlp.down_proj"], 300);
      EXPECT_EQ(qc["in_features"].size(), 5u);
    }
  }
  EXPECT_EQ(out.shards().front().metadata().at("fp8q.layout"), c.layout);
  if (c.layout == "trn3-mx") EXPECT_EQ(out.shards().front().metadata().at("fp8q.weight_format"), fp4() ? "e2m1" : "e4m3fn");
}

// tie_word_embeddings: no lm_head.weight is stored, but the loader still builds lm_head as a
// Linear, so every layout lists it among the modules not to convert.
TEST_P(LayoutTest, TiedEmbeddingsListLmHeadAsNotConverted) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "in");
  std::vector<HostTensor> tied;
  for (const HostTensor& t : model_)
    if (t.name != "lm_head.weight") tied.push_back(t);
  testing::write_model_file(dir / "in" / "model.safetensors", tied);
  std::ofstream(dir / "in" / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 160, "tie_word_embeddings": true})";
  quantize_checkpoint(dir / "in", dir / "out", options());
  const Json qc = Json::parse(testing::read_raw(dir / "out" / "config.json"))["quantization_config"];
  const char* key = GetParam().layout.starts_with("ct-") ? "ignore" : "modules_to_not_convert";
  ASSERT_TRUE(qc.contains(key)) << qc.dump();
  const auto listed = qc[key].get<std::vector<std::string>>();
  EXPECT_NE(std::find(listed.begin(), listed.end(), "lm_head"), listed.end()) << qc[key].dump();
  EXPECT_TRUE(std::is_sorted(listed.begin(), listed.end()));
}

TEST_P(LayoutTest, SameBytesForAnyThreadCount) {
  quantize_checkpoint(dir_ / "in", dir_ / "t1", options(1));
  quantize_checkpoint(dir_ / "in", dir_ / "t3", options(3));
  for (const char* f : {"model.safetensors", "config.json"})
    EXPECT_EQ(testing::read_raw(dir_ / "t1" / f), testing::read_raw(dir_ / "t3" / f)) << f;
}

// A forced ISA (LayoutOptions::isa) changes neither a byte nor an error figure.
TEST_P(LayoutTest, SameBytesAndFiguresOnEveryIsa) {
  QuantizeCheckpointOptions o = options(2);
  o.layout_options.isa = Isa::kGeneric;
  const auto want = quantize_checkpoint(dir_ / "in", dir_ / "generic", o);
  for (Isa isa : kAllIsas) {
    if (isa == Isa::kGeneric || !isa_supported(isa)) continue;
    const std::string name(isa_name(isa));
    o.layout_options.isa = isa;
    const auto got = quantize_checkpoint(dir_ / "in", dir_ / name, o);
    for (const char* f : {"model.safetensors", "config.json"})
      EXPECT_EQ(testing::read_raw(dir_ / "generic" / f), testing::read_raw(dir_ / name / f)) << name << " " << f;
    ASSERT_EQ(got.tensors.size(), want.tensors.size());
    for (std::size_t i = 0; i < got.tensors.size(); ++i) {
      const ErrorStats &a = got.tensors[i].stats, &b = want.tensors[i].stats;
      EXPECT_EQ(a.count, b.count) << name;
      EXPECT_EQ(a.saturated, b.saturated) << name;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(a.sum_sq_signal), std::bit_cast<std::uint64_t>(b.sum_sq_signal)) << name;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(a.sum_sq_error), std::bit_cast<std::uint64_t>(b.sum_sq_error)) << name;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(a.max_abs_error), std::bit_cast<std::uint64_t>(b.max_abs_error)) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, LayoutTest,
    ::testing::Values(Case{"hf_fp8", "hf-fp8", std::nullopt, std::nullopt},
                      Case{"ct_fp8_tensor", "ct-fp8", Granularity::tensor(), std::nullopt},
                      Case{"ct_fp8_channel", "ct-fp8", std::nullopt, std::nullopt},
                      Case{"ct_fp8_block", "ct-fp8", Granularity::block(128, 128), std::nullopt},
                      Case{"ct_mxfp8", "ct-mxfp8", std::nullopt, std::nullopt},
                      Case{"ct_mxfp4", "ct-mxfp4", std::nullopt, std::nullopt},
                      Case{"ct_nvfp4", "ct-nvfp4", std::nullopt, std::nullopt},
                      Case{"trn2_channel", "trn2", std::nullopt, std::nullopt},
                      Case{"trn2_block", "trn2", Granularity::block(128, 128), std::nullopt},
                      Case{"trn3_mx", "trn3-mx", std::nullopt, std::nullopt},
                      Case{"trn3_mx_wrapX", "trn3-mx", std::nullopt, trn3::KLayout::kWrapX},
                      Case{"trn3_mx_1x32", "trn3-mx", std::nullopt, trn3::KLayout::k1x32},
                      Case{"trn3_mxfp4", "trn3-mx", std::nullopt, std::nullopt, FormatId::kE2M1},
                      Case{"trn3_mxfp4_wrapX", "trn3-mx", std::nullopt, trn3::KLayout::kWrapX, FormatId::kE2M1},
                      Case{"trn3_mxfp4_1x32", "trn3-mx", std::nullopt, trn3::KLayout::k1x32, FormatId::kE2M1}),
    case_name);

// The packed FP4 layouts quantize these weights of testing::small_model(): down_proj [160, 300]
// has 300 inputs, not a multiple of 16 or 32; the router, the embedding and lm_head never are.
const std::set<std::string> kFp4Quantized = {"model.layers.0.self_attn.q_proj.weight",
                                             "model.layers.0.self_attn.o_proj.weight",
                                             "model.layers.0.mlp.gate_proj.weight"};

// dir/m.safetensors = the small model, quantized with `layout` into dir/out.
QuantizeResult quantize_small_model(const ScratchDir& dir, const std::string& layout) {
  testing::write_model_file(dir / "m.safetensors", testing::small_model());
  QuantizeCheckpointOptions o;
  o.layout = layout;
  return quantize_checkpoint(dir / "m.safetensors", dir / "out", o);
}

// fp8q::quantize of a stored weight `t` into e2m1 with `g` (and `rule` for MX), and a check that
// the packed codes and the scale bytes a layout stored are its bytes.
QuantizedTensor expect_fp4_bytes(const Model& out, const ModelTensor& packed, const ModelTensor& scales,
                                 const HostTensor& t, const Granularity& g, MxScaleRule rule = MxScaleRule::kFloor) {
  QuantizeOptions qo;
  qo.element = FormatId::kE2M1;
  qo.granularity = g;
  qo.mx_rule = rule;
  const QuantizedTensor want = quantize(std::as_bytes(std::span(t.bytes)),
                                        t.dtype == DType::kF32 ? kF32 : t.dtype == DType::kBF16 ? kBF16 : kF16, t.shape, qo);
  const auto p = out.bytes(packed), s = out.bytes(scales);
  EXPECT_TRUE(p.size() == want.codes.size() && std::memcmp(p.data(), want.codes.data(), p.size()) == 0);
  EXPECT_TRUE(s.size() == want.scales.size() && std::memcmp(s.data(), want.scales.data(), s.size()) == 0);
  return want;
}

// ct-nvfp4: weight_packed / weight_scale / weight_global_scale of every weight whose input
// dimension is a multiple of 16 (fp8q's NVFP4 quantization, byte for byte), dequantized from
// the raw bytes as compressed-tensors does (q * fp32(s / S)) within half an e2m1 step, the
// others kept and listed in "ignore"; config.json's NVFP4A16 arguments; verify.
TEST(CtNvfp4Layout, MatchesItsDefinitionAndDequantizes) {
  ScratchDir dir;
  const auto model = testing::small_model();
  const auto result = quantize_small_model(dir, "ct-nvfp4");
  const Model out = Model::open(dir / "out");
  const std::vector<std::string> kept_linear = {"lm_head", "model.embed_tokens", "model.layers.0.mlp.down_proj",
                                                "model.layers.0.mlp.gate"};
  for (const HostTensor& t : model) {
    SCOPED_TRACE(t.name);
    const std::string module = t.name.substr(0, t.name.size() - 7);
    if (kFp4Quantized.count(t.name) == 0) {
      ASSERT_NE(out.find(t.name), nullptr);
      EXPECT_EQ(out.find(module + ".weight_packed"), nullptr);
      continue;
    }
    EXPECT_EQ(out.find(t.name), nullptr);  // the codes are weight_packed
    const ModelTensor* q = out.find(module + ".weight_packed");
    const ModelTensor* sc = out.find(module + ".weight_scale");
    const ModelTensor* g = out.find(module + ".weight_global_scale");
    ASSERT_TRUE(q != nullptr && sc != nullptr && g != nullptr);
    const std::size_t rows = t.shape[0], cols = t.shape[1];
    EXPECT_EQ(q->info->dtype, DType::kU8);
    EXPECT_EQ(q->info->shape, (std::vector<std::uint64_t>{rows, cols / 2}));
    EXPECT_EQ(sc->info->dtype, DType::kF8_E4M3);
    EXPECT_EQ(sc->info->shape, (std::vector<std::uint64_t>{rows, cols / 16}));
    EXPECT_EQ(g->info->dtype, DType::kF32);
    EXPECT_EQ(g->info->shape, (std::vector<std::uint64_t>{1}));
    const QuantizedTensor want = expect_fp4_bytes(out, *q, *sc, t, Granularity::nvfp4());
    const auto packed = out.bytes(*q), scales = out.bytes(*sc);
    ASSERT_EQ(packed.size(), rows * cols / 2);
    ASSERT_EQ(scales.size(), rows * cols / 16);
    float global = 0;
    std::memcpy(&global, out.bytes(*g).data(), 4);
    EXPECT_EQ(bits_of(global), bits_of(want.global_scale));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t k = 0; k < cols; ++k) {
        const auto byte = std::to_integer<unsigned>(packed[(r * cols + k) / 2]);
        const float d = decode_f32(std::to_integer<unsigned>(scales[r * (cols / 16) + k / 16]), kE4M3FN) / global;
        const float xh = decode_f32(k % 2 == 0 ? byte & 0xF : byte >> 4, kE2M1) * d;
        const float x = value(t, r * cols + k);
        // half of e2m1's widest step (4 -> 6), and one ulp of d for the encode / decode roundings
        ASSERT_LE(std::fabs(static_cast<double>(x) - xh), 1.01 * d) << "row " << r << " col " << k;
      }
  }
  for (const auto& r : result.tensors)
    if (r.quantized) EXPECT_GT(r.stats.sqnr_db(), 15.0) << r.name;
  const auto v = verify_checkpoint(dir / "out", dir / "m.safetensors", 2);
  EXPECT_TRUE(v.problems.empty()) << (v.problems.empty() ? "" : v.problems.front());
  EXPECT_EQ(v.summary.quantized, kFp4Quantized.size());

  const Json qc = Json::parse(testing::read_raw(dir / "out" / "config.json"))["quantization_config"];
  EXPECT_EQ(qc["format"], "nvfp4-pack-quantized");
  EXPECT_EQ(qc["quant_method"], "compressed-tensors");
  EXPECT_EQ(qc["version"], "0.10.0");
  EXPECT_EQ(qc["ignore"].get<std::vector<std::string>>(), kept_linear);
  const Json& grp = qc["config_groups"]["group_0"];
  EXPECT_EQ(grp["format"], "nvfp4-pack-quantized");
  EXPECT_TRUE(grp["input_activations"].is_null());
  const Json& w = grp["weights"];
  EXPECT_TRUE(includes(kQuantizationArgs_0_12_2, keys(w))) << w.dump();
  EXPECT_EQ(w["num_bits"], 4);
  EXPECT_EQ(w["type"], "float");
  EXPECT_EQ(w["strategy"], "tensor_group");
  EXPECT_EQ(w["group_size"], 16);
  EXPECT_EQ(w["dynamic"], false);
}

// ct-mxfp4: weight_packed / weight_scale (E8M0) of every weight whose input dimension is a
// multiple of 32, byte for byte fp8q's MX quantization into e2m1 under the `even` rule (which is
// compressed-tensors' MX rule: tests/python/test_ct_producer.py compares with its code); the
// config's MXFP4A16 arguments; verify.
TEST(CtMxfp4Layout, MatchesItsDefinition) {
  ScratchDir dir;
  const auto model = testing::small_model();
  quantize_small_model(dir, "ct-mxfp4");
  const Model out = Model::open(dir / "out");
  for (const HostTensor& t : model) {
    SCOPED_TRACE(t.name);
    const std::string module = t.name.substr(0, t.name.size() - 7);
    if (kFp4Quantized.count(t.name) == 0) {
      EXPECT_NE(out.find(t.name), nullptr);
      EXPECT_EQ(out.find(module + ".weight_packed"), nullptr);
      continue;
    }
    EXPECT_EQ(out.find(t.name), nullptr);
    const ModelTensor* q = out.find(module + ".weight_packed");
    const ModelTensor* sc = out.find(module + ".weight_scale");
    ASSERT_TRUE(q != nullptr && sc != nullptr);
    const std::size_t rows = t.shape[0], cols = t.shape[1];
    EXPECT_EQ(q->info->dtype, DType::kU8);
    EXPECT_EQ(q->info->shape, (std::vector<std::uint64_t>{rows, cols / 2}));
    EXPECT_EQ(sc->info->dtype, DType::kU8);
    EXPECT_EQ(sc->info->shape, (std::vector<std::uint64_t>{rows, cols / 32}));
    expect_fp4_bytes(out, *q, *sc, t, Granularity::mx(), MxScaleRule::kEven);
  }
  const auto v = verify_checkpoint(dir / "out", dir / "m.safetensors", 2);
  EXPECT_TRUE(v.problems.empty()) << (v.problems.empty() ? "" : v.problems.front());
  EXPECT_EQ(v.summary.quantized, kFp4Quantized.size());
  const Json qc = Json::parse(testing::read_raw(dir / "out" / "config.json"))["quantization_config"];
  EXPECT_EQ(qc["format"], "mxfp4-pack-quantized");
  EXPECT_EQ(qc["ignore"].get<std::vector<std::string>>(),
            (std::vector<std::string>{"lm_head", "model.embed_tokens", "model.layers.0.mlp.down_proj",
                                      "model.layers.0.mlp.gate"}));
  const Json& w = qc["config_groups"]["group_0"]["weights"];
  EXPECT_TRUE(includes(kQuantizationArgs_0_15_0, keys(w))) << w.dump();
  EXPECT_EQ(w["num_bits"], 4);
  EXPECT_EQ(w["strategy"], "group");
  EXPECT_EQ(w["group_size"], 32);
  EXPECT_EQ(w["scale_dtype"], "torch.uint8");
  EXPECT_TRUE(qc["config_groups"]["group_0"]["input_activations"].is_null());
}

// ---- beyond one layout ----
TEST(Pipeline, ShardsAsTheyFillWithAnIndex) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "in");
  const auto model = testing::small_model();
  // input: two shards with an index
  std::vector<HostTensor> a(model.begin(), model.begin() + 5), b(model.begin() + 5, model.end());
  testing::write_model_file(dir / "in" / "model-00001-of-00002.safetensors", a);
  testing::write_model_file(dir / "in" / "model-00002-of-00002.safetensors", b);
  Json index;
  for (const auto& t : a) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const auto& t : b) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  std::ofstream(dir / "in" / "model.safetensors.index.json") << index.dump();
  testing::write_config(dir / "in");
  QuantizeCheckpointOptions o;
  o.layout = "ct-fp8";
  o.max_shard_bytes = 40000;
  const auto r = quantize_checkpoint(dir / "in", dir / "out", o);
  const Model out = Model::open(dir / "out");
  EXPECT_GT(out.shards().size(), 2u);
  ASSERT_TRUE(out.index().has_value());
  EXPECT_EQ(*out.index()->total_size, out.total_bytes());
  // A shard holds at most 40000 data bytes, unless one tensor (with its scale) alone is larger.
  for (const auto& s : out.shards())
    if (s.tensors().size() > 2) EXPECT_LE(std::filesystem::file_size(s.path()), 40000u + 4096u) << s.path();
  EXPECT_TRUE(verify_checkpoint(dir / "out", dir / "in").problems.empty());
  EXPECT_EQ(r.summary.quantized, 4u);
}

TEST(Pipeline, StaticInputScalesFromCalibrationData) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "in");
  testing::write_model_file(dir / "in" / "model.safetensors", testing::small_model());
  testing::write_config(dir / "in");
  std::vector<HostTensor> samples;
  for (const char* m : {"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj", "model.layers.0.mlp.gate_proj",
                        "model.layers.0.mlp.down_proj"})
    samples.push_back(testing::make_tensor(std::string(m) + ".input", DType::kF32, {8, 16}, testing::random_values(128, 42, 1.0f)));
  testing::write_model_file(dir / "calib.safetensors", samples);
  QuantizeCheckpointOptions o;
  o.layout = "ct-fp8";
  o.calib_data = dir / "calib.safetensors";
  o.calib_method = "max";
  quantize_checkpoint(dir / "in", dir / "out", o);
  const Model out = Model::open(dir / "out");
  float amax = 0;
  for (std::size_t i = 0; i < 128; ++i) amax = std::max(amax, std::fabs(value(samples[0], i)));
  const ModelTensor* is = out.find("model.layers.0.self_attn.q_proj.input_scale");
  ASSERT_NE(is, nullptr);
  EXPECT_EQ(is->info->dtype, DType::kBF16);  // the weight's dtype
  EXPECT_EQ(is->info->shape, (std::vector<std::uint64_t>{1}));
  const float s = stored_scale(out, "model.layers.0.self_attn.q_proj.input_scale", 0);
  EXPECT_GE(s, amax / 448.0f * (1 - 1e-6f));
  EXPECT_LT(s, amax / 448.0f * 1.01f);
  const Json qc = Json::parse(testing::read_raw(dir / "out" / "config.json"))["quantization_config"];
  EXPECT_EQ(qc["config_groups"]["group_0"]["input_activations"]["dynamic"], false);
  EXPECT_EQ(qc["config_groups"]["group_0"]["input_activations"]["strategy"], "tensor");
  EXPECT_TRUE(verify_checkpoint(dir / "out", dir / "in").problems.empty());
}

TEST(Pipeline, IgnoreRegexAndBareFileInput) {
  ScratchDir dir;
  testing::write_model_file(dir / "m.safetensors", testing::small_model());
  QuantizeCheckpointOptions o;
  o.layout = "ct-fp8";
  o.ignore = {"o_proj", "^model\\.layers\\.0\\.mlp\\.down"};
  const auto r = quantize_checkpoint(dir / "m.safetensors", dir / "out", o);
  EXPECT_EQ(r.summary.quantized, 2u);
  for (const auto& t : r.tensors)
    if (t.name.find("o_proj") != std::string::npos) EXPECT_EQ(t.reason, "--ignore o_proj");
  const Json qc = Json::parse(testing::read_raw(dir / "out" / "config.json"))["quantization_config"];
  EXPECT_EQ(qc["ignore"].size(), 5u);  // lm_head, embed_tokens, gate, o_proj, down_proj
  EXPECT_TRUE(verify_checkpoint(dir / "out", dir / "m.safetensors").problems.empty());
}

TEST(Pipeline, VerifyFindsATamperedTensor) {
  ScratchDir dir;
  quantize_small_model(dir, "ct-fp8");
  // Flip one byte of the data section of the output's last tensor (lm_head, kept).
  std::string bytes = testing::read_raw(dir / "out" / "model.safetensors");
  bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 0x40);
  testing::write_raw(dir / "out" / "model.safetensors", bytes);
  const auto v = verify_checkpoint(dir / "out", dir / "m.safetensors");
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_NE(v.problems[0].find("bytes differ"), std::string::npos) << v.problems[0];
}

// A quantized weight whose codes or scales were destroyed is a problem too, not only a figure.
TEST(Pipeline, VerifyFindsDestroyedCodesAndScales) {
  ScratchDir dir;
  quantize_small_model(dir, "ct-fp8");
  const auto path = dir / "out" / "model.safetensors";
  const std::string original = testing::read_raw(path);
  const Header h = parse_header(std::as_bytes(std::span(original)), "out");
  auto range = [&](const std::string& name) {
    for (const TensorInfo& t : h.tensors)
      if (t.name == name) return std::pair<std::size_t, std::size_t>(h.data_start + t.begin, h.data_start + t.end);
    ADD_FAILURE() << name << " not in the output";
    return std::pair<std::size_t, std::size_t>(0, 0);
  };
  struct Damage {
    std::string tensor, damaged, says;
    char fill;
  };
  const Damage damages[] = {
      {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.weight", "0.00 dB", 0},
      {"model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.weight_scale", "dB SQNR", 0x7F},
  };
  for (const Damage& d : damages) {
    std::string bytes = original;
    const auto [b, e] = range(d.damaged);
    std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(b), bytes.begin() + static_cast<std::ptrdiff_t>(e), d.fill);
    testing::write_raw(path, bytes);
    const auto v = verify_checkpoint(dir / "out", dir / "m.safetensors");
    ASSERT_EQ(v.problems.size(), 1u) << d.damaged;
    EXPECT_NE(v.problems[0].find(d.tensor), std::string::npos) << v.problems[0];
    EXPECT_NE(v.problems[0].find(d.says), std::string::npos) << v.problems[0];
  }
  testing::write_raw(path, original);
  EXPECT_TRUE(verify_checkpoint(dir / "out", dir / "m.safetensors").problems.empty());
}

// verify reports what would make a loader misread the output: config.json's module lists and
// arguments against the tensors stored, and a quantized weight of a shape the layout keeps.
TEST(Pipeline, VerifyFindsWhatALoaderWouldMisread) {
  ScratchDir dir;
  quantize_small_model(dir, "ct-fp8");
  const auto config_path = dir / "out" / "config.json";
  const std::string original = testing::read_raw(config_path);
  struct Edit {
    std::function<void(Json&)> edit;
    std::string says;
  };
  const Edit edits[] = {
      {[](Json& q) { q["ignore"].erase(std::find(q["ignore"].begin(), q["ignore"].end(), "model.layers.0.mlp.gate")); },
       "quantization_config.ignore does not list \"model.layers.0.mlp.gate\", which is not quantized"},
      {[](Json& q) { q["ignore"].push_back("model.layers.0.self_attn.q_proj"); },
       "lists \"model.layers.0.self_attn.q_proj\", which is stored quantized"},
      {[](Json& q) { q["config_groups"]["group_0"]["weights"]["zp_dtype"] = nullptr; },
       "quantization_config.config_groups is"},
      {[](Json& q) { q["format"] = "naive-quantized"; }, "quantization_config.format is \"naive-quantized\""},
      {[](Json& q) { q["weight_block_size"] = {128, 128}; }, "weight_block_size is not a key layout ct-fp8 writes"},
  };
  for (const Edit& e : edits) {
    Json c = Json::parse(original);
    e.edit(c["quantization_config"]);
    testing::write_raw(config_path, c.dump());
    const auto v = verify_checkpoint(dir / "out", dir / "m.safetensors");
    ASSERT_EQ(v.problems.size(), 1u) << e.says;
    EXPECT_NE(v.problems[0].find(e.says), std::string::npos) << v.problems[0];
  }
  testing::write_raw(config_path, original);
  EXPECT_TRUE(verify_checkpoint(dir / "out", dir / "m.safetensors").problems.empty());

  // an hf-fp8 weight of out_features 200 stored with a partial block (as fp8q wrote before it
  // kept such weights): transformers would read blocks of 100 rows
  ScratchDir d2;
  std::filesystem::create_directories(d2 / "out");
  const HostTensor in = testing::make_tensor("l.weight", DType::kBF16, {200, 128}, std::vector<float>(200 * 128, 0.5f));
  testing::write_model_file(d2 / "in.safetensors", {in});
  const std::vector<std::byte> codes(200 * 128, std::byte{0x38});  // e4m3fn 1.0
  const float half[2] = {0.5f, 0.5f};
  const auto scales = std::as_bytes(std::span(half));
  const TensorData out[] = {{{"l.weight", DType::kF8_E4M3, {200, 128}}, codes},
                            {{"l.weight_scale_inv", DType::kF32, {2, 1}}, scales}};
  write_file(d2 / "out" / "model.safetensors", out, {{"format", "pt"}, {"fp8q.layout", "hf-fp8"}});
  testing::write_raw(d2 / "out" / "config.json",
                     R"({"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                         "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]}})");
  const auto v = verify_checkpoint(d2 / "out", d2 / "in.safetensors");
  ASSERT_EQ(v.problems.size(), 1u) << (v.problems.empty() ? "" : v.problems[0]);
  EXPECT_NE(v.problems[0].find("\"l.weight\" is stored quantized, but out_features 200 is not a multiple of 128"),
            std::string::npos)
      << v.problems[0];
}

}  // namespace
}  // namespace fp8q::checkpoint
