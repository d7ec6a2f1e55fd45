// Quantized inputs converted into another layout (checkpoint/src/reencode/): the exact decoding,
// round-to-odd, the re-encoding under the input's scales, and the whole pipeline on a
// DeepSeek-V3-style checkpoint written from its documented layout (F8_E4M3 weight, F32
// weight_scale_inv per 128 x 128 block, config.json quant_method "fp8").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fp8q/checkpoint/model_dir.hpp"
#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/numerics/convert.hpp"
#include "quantize_test_util.hpp"
#include "reencode/reencode.hpp"

namespace fp8q::checkpoint {
namespace {

using reencode::exact_values;

// A grid view of e4m3fn codes: one scale per block.
DequantView grid(FormatId element, std::size_t rows, std::size_t cols, std::size_t block, std::vector<std::uint8_t> codes,
                 std::vector<float> scales) {
  DequantView v;
  v.element = element;
  v.rows = rows;
  v.cols = cols;
  v.codes = std::move(codes);
  v.grid = BlockGrid{rows, cols, block, block};
  v.scale_inv = std::move(scales);
  return v;
}

TEST(Reencode, ExactValuesAreCodeTimesScale) {
  // 0x7E is e4m3fn's 448, 0x01 its smallest subnormal 2^-9; scale 0x1.000002p0 (24 bits)
  const float s = float_of(0x3F800001u);
  const DequantView v = grid(FormatId::kE4M3FN, 1, 3, 128, {0x7E, 0x01, 0xFF}, {s});
  const auto x = exact_values(v);
  EXPECT_EQ(x[0], 448.0 * static_cast<double>(s));  // 27 bits: not an fp32
  EXPECT_NE(static_cast<double>(static_cast<float>(x[0])), x[0]);
  EXPECT_EQ(x[1], std::ldexp(static_cast<double>(s), -9));
  EXPECT_TRUE(std::isnan(x[2]));
}

TEST(Reencode, RoundToOddKeepsTheStickyBit) {
  const double exact = 1.0 + std::ldexp(1.0, -30);  // between fp32's 1 and 1 + 2^-23
  std::uint64_t rounded = 0;
  const auto f = reencode::round_to_odd_f32({exact, 0.75, -exact, std::ldexp(1.0, 200)}, rounded);
  EXPECT_EQ(bits_of(f[0]), 0x3F800001u);  // truncated to 1, last bit set
  EXPECT_EQ(f[1], 0.75f);
  EXPECT_EQ(bits_of(f[2]), 0xBF800001u);
  EXPECT_EQ(f[3], std::numeric_limits<float>::max());
  EXPECT_EQ(rounded, 3u);
  // a tie of e4m3fn after rounding to fp32 by nearest-even is not one of the exact value:
  // 1 + 2^-4 + 2^-30 is above the midpoint 1 + 2^-4 of e4m3fn's 1 and 1.125
  const double above_tie = 1.0 + std::ldexp(1.0, -4) + std::ldexp(1.0, -30);
  const auto g = reencode::round_to_odd_f32({above_tie}, rounded);
  EXPECT_EQ(decode_f64(encode_f32(g[0], kE4M3FN), kE4M3FN), 1.125);
  EXPECT_EQ(decode_f64(encode_f32(static_cast<float>(above_tie), kE4M3FN), kE4M3FN), 1.0);  // double rounding
}

TEST(Reencode, E4m3fnIntoTrainium2HalvesCodesAndDoublesScales) {
  // every e4m3fn code but NaN, scale 0.37: the trn2 structure (e4m3, one 128 x 128 block)
  std::vector<std::uint8_t> codes;
  for (int c = 0; c < 256; ++c)
    if ((c & 0x7F) != 0x7F) codes.push_back(static_cast<std::uint8_t>(c));
  const std::size_t n = codes.size();
  const DequantView src = grid(FormatId::kE4M3FN, 1, n, 128 * 4, codes, {0.37f});
  DequantView structure = grid(FormatId::kE4M3, 1, n, 128 * 4, std::vector<std::uint8_t>(n), {1.0f});
  const auto values = exact_values(src);
  const auto out = reencode::source_scaled_encoding(src, structure);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->view.scale_inv[0], 0.74f);
  const auto got = exact_values(out->view);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (got[i] != values[i]) {
      ++changed;
      // only the odd multiples of 2^-9 below 2^-5 (v / 2 needs e4m3's missing 2^-10)
      const double v = std::fabs(decode_f64(codes[i], kE4M3FN));
      EXPECT_LT(v, 1.0 / 32) << int(codes[i]);
      EXPECT_EQ(std::fmod(v * 512, 2.0), 1.0) << int(codes[i]);
    }
  EXPECT_EQ(changed, 16u);  // 8 codes, both signs
  EXPECT_EQ(out->changed, changed);
}

TEST(Reencode, MxfpScalesArePowersOfTwoAndExact) {
  // MX source (E8M0 127 + 3) into an MX structure with other scales: the smallest scale that
  // holds each group's largest value, every code exact
  DequantView src;
  src.element = FormatId::kE4M3FN;
  src.rows = 1;
  src.cols = 64;
  src.mx = true;
  src.groups_per_row = 2;
  src.e8m0 = {130, 120};
  src.group_of_col.resize(64);
  for (std::size_t c = 0; c < 64; ++c) {
    src.group_of_col[c] = static_cast<std::uint32_t>(c / 32);
    src.codes.push_back(static_cast<std::uint8_t>(c % 32 == 0 ? 0x7E : c));  // 448 leads each group
  }
  DequantView structure = src;
  structure.e8m0 = {0, 0};
  const auto values = exact_values(src);
  const auto out = reencode::source_scaled_encoding(src, structure);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->view.e8m0, src.e8m0);
  EXPECT_EQ(exact_values(out->view), values);
  EXPECT_EQ(out->changed, 0u);
}

// trn3-mx stores a stack of experts [E, N, K] as the experts' 2-D weights one after another:
// each expert's bytes are its [N, K] weight's, for MXFP8 and MXFP4; read back, the same view.
TEST(Reencode, Trainium3MxStoresExpertsAsTheirWeightsStacked) {
  const Layout& trn3 = *layout_named("trn3-mx");
  constexpr std::size_t kE = 3, kN = 5, kK = 64;
  std::vector<float> x(kE * kN * kK);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(static_cast<float>(i % 37) - 18.0f, static_cast<int>(i % 11) - 5);
  for (std::optional<FormatId> element : {std::optional<FormatId>{}, std::optional<FormatId>{FormatId::kE2M1}}) {
    LayoutOptions o;
    o.element = element;
    WeightRef stack;
    stack.module = "m.experts.gate_up_proj";
    stack.dtype = DType::kF32;
    stack.shape = {kE, kN, kK};
    stack.data = std::as_bytes(std::span<const float>(x));
    ASSERT_TRUE(trn3.stores_experts(o));
    EXPECT_FALSE(trn3.cannot_quantize(stack.shape, o).has_value());
    const auto specs = trn3.plan(stack, o);
    EXPECT_EQ(specs[0].shape, (std::vector<std::uint64_t>{kE, kN, element ? kK / 2 : kK}));
    EXPECT_EQ(specs[1].shape, (std::vector<std::uint64_t>{kE, kN, kK / 32}));
    const QuantizedWeight q = trn3.quantize(stack, o);
    std::size_t codes_at = 0, scales_at = 0;
    for (std::size_t e = 0; e < kE; ++e) {
      WeightRef one = stack;
      one.shape = {kN, kK};
      one.data = stack.data.subspan(e * kN * kK * 4, kN * kK * 4);
      const QuantizedWeight qe = trn3.quantize(one, o);
      for (std::size_t t = 0; t < 2; ++t) {
        std::size_t& at = t == 0 ? codes_at : scales_at;
        const auto& b = qe.tensors[t].bytes;
        ASSERT_TRUE(std::equal(b.begin(), b.end(), q.tensors[t].bytes.begin() + static_cast<std::ptrdiff_t>(at)));
        at += b.size();
      }
    }
    EXPECT_EQ(codes_at, q.tensors[0].bytes.size());
    EXPECT_EQ(scales_at, q.tensors[1].bytes.size());
    std::vector<TensorInfo> infos(q.tensors.size());
    for (std::size_t t = 0; t < infos.size(); ++t) {
      infos[t].name = q.tensors[t].spec.name;
      infos[t].dtype = q.tensors[t].spec.dtype;
      infos[t].shape = q.tensors[t].spec.shape;
    }
    const TensorLookup lookup = [&](const std::string& name) -> StoredTensor {
      for (std::size_t t = 0; t < infos.size(); ++t)
        if (infos[t].name == name) return {&infos[t], q.tensors[t].bytes};
      return {};
    };
    EXPECT_EQ(exact_values(trn3.read_back(stack.module, stack.shape, lookup, o)), exact_values(q.view));
    LayoutOptions packed = o;
    packed.pack = trn3::KLayout::kWrapX;
    EXPECT_FALSE(trn3.stores_experts(packed));
    EXPECT_TRUE(trn3.cannot_quantize(stack.shape, packed).has_value());
  }
}

// ---- the pipeline on a DeepSeek-V3-style checkpoint ----

struct Dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("fp8q_reencode_" + std::to_string(::getpid()) + "_" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Dir() {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Dir() { std::filesystem::remove_all(path); }
};

// W [256, 384] as e4m3fn codes and a [2, 3] grid of F32 scale_inv (powers of two when `ue8m0`),
// lm_head kept in BF16; config.json as DeepSeek-V3 writes it.
void write_deepseek_style(const std::filesystem::path& dir, bool ue8m0, bool odd_subnormal,
                          std::vector<std::uint8_t>& codes, std::vector<float>& scales) {
  const std::size_t rows = 256, cols = 384;
  std::filesystem::create_directories(dir);
  codes.resize(rows * cols);
  std::uint32_t x = 12345;
  for (auto& c : codes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<std::uint8_t>((x >> 24) & 0xFF);
    if ((c & 0x7F) == 0x7F) c ^= 0x01;  // no NaN
    if (!odd_subnormal && (c & 0x7F) < 0x10 && (c & 1)) c ^= 0x01;
  }
  scales = ue8m0 ? std::vector<float>{0.125f, 0.25f, 0.0078125f, 1.0f, 0.5f, 0.0625f}
                 : std::vector<float>{0.0123f, 0.37f, 0.00071f, 1.7f, 0.055f, 0.0009f};
  std::vector<std::byte> cb(codes.size()), sb(scales.size() * 4);
  std::memcpy(cb.data(), codes.data(), cb.size());
  std::memcpy(sb.data(), scales.data(), sb.size());
  const auto head = testing::make_tensor("lm_head.weight", DType::kBF16, {8, 384}, testing::random_values(8 * 384, 3));
  write_file(dir / "model.safetensors",
             std::vector<TensorData>{{{"model.layers.0.mlp.down_proj.weight", DType::kF8_E4M3, {rows, cols}}, cb},
                                     {{"model.layers.0.mlp.down_proj.weight_scale_inv", DType::kF32, {2, 3}}, sb},
                                     {{"lm_head.weight", DType::kBF16, {8, 384}}, head.bytes}});
  std::ofstream(dir / "config.json") << std::string(R"({"architectures": ["DeepseekV3ForCausalLM"], "quantization_config": )"
                                                    R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", )"
                                                    R"("weight_block_size": [128, 128])") +
                                            (ue8m0 ? R"(, "scale_fmt": "ue8m0"})" : "}") + "}";
}

// The stored output's values, decoded exactly through the layout's own reader.
std::vector<double> output_values(const std::filesystem::path& out, const std::string& layout, const LayoutOptions& o) {
  const Model m = Model::open(out);
  const TensorLookup lookup = [&](const std::string& name) -> StoredTensor {
    const ModelTensor* t = m.find(name);
    return t == nullptr ? StoredTensor{} : StoredTensor{t->info, m.bytes(*t)};
  };
  return exact_values(layout_named(layout)->read_back("model.layers.0.mlp.down_proj", {256, 384}, lookup, o));
}

std::vector<double> input_values(const std::vector<std::uint8_t>& codes, const std::vector<float>& scales) {
  std::vector<double> v(codes.size());
  for (std::size_t r = 0; r < 256; ++r)
    for (std::size_t c = 0; c < 384; ++c)
      v[r * 384 + c] = decode_f64(codes[r * 384 + c], kE4M3FN) * scales[(r / 128) * 3 + c / 128];
  return v;
}

// A DeepSeek-V3-style input in a scratch folder, and the options converting it into `layout`.
struct DeepSeekInput {
  Dir d;
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  QuantizeCheckpointOptions o;
  DeepSeekInput(bool ue8m0, bool odd_subnormal, const std::string& layout, bool require_exact) {
    write_deepseek_style(d.path / "in", ue8m0, odd_subnormal, codes, scales);
    o.layout = layout;
    o.require_exact = require_exact;
  }
  QuantizeResult run() const { return quantize_checkpoint(d.path / "in", d.path / "out", o); }
};

// Every e4m3fn code under scales of 24 significant bits (ties and near-ties of bf16 / fp16 /
// fp32 after the product), scales that overflow fp16 and fp32, and one that is subnormal in all
// three: each value is the scalar reference's nearest-even rounding of the exact product
// (encode_f64), the report counts exactly the values that differ, and the bytes do not depend
// on the thread count.
TEST(Reencode, DequantizedIsTheExactValueRoundedOnce) {
  const std::vector<float> scales = {1.0f, float_of(0x3F800001u), float_of(0x3FC00001u), float_of(0x3F7FFFFFu),
                                     float_of(0x3F808080u), 1e30f, 3e38f, 1e-40f, float_of(0x477FE000u)};
  const std::size_t cols = 256;
  std::vector<std::uint8_t> codes;
  for (std::size_t r = 0; r < scales.size(); ++r)
    for (std::size_t c = 0; c < cols; ++c) codes.push_back(static_cast<std::uint8_t>(c));
  DequantView v = grid(FormatId::kE4M3FN, scales.size(), cols, 1, codes, {});
  v.grid = BlockGrid{scales.size(), cols, 1, cols};
  v.scale_inv = scales;
  const auto exact = exact_values(v);
  ConvertOptions nearest;
  nearest.overflow = Overflow::kInfOrNan;
  for (const auto& [dtype, format] : {std::pair{DType::kF32, &kF32}, {DType::kBF16, &kBF16}, {DType::kF16, &kF16}}) {
    const auto one = reencode::dequantize(v, dtype, 1);
    EXPECT_EQ(one.bytes, reencode::dequantize(v, dtype, 3).bytes);
    const std::size_t width = format->storage_bytes();
    std::uint64_t changed = 0;
    std::optional<std::uint64_t> first_nonfinite;
    for (std::size_t i = 0; i < exact.size(); ++i) {
      std::uint64_t got = 0;
      std::memcpy(&got, one.bytes.data() + i * width, width);
      ASSERT_EQ(got, encode_f64(exact[i], *format, nearest)) << dtype_name(dtype) << " element " << i;
      const double y = decode_f64(got, *format);
      changed += y != exact[i] && !(std::isnan(y) && std::isnan(exact[i]));
      if (!first_nonfinite && !std::isfinite(y)) first_nonfinite = i;
    }
    EXPECT_EQ(one.report.changed, changed) << dtype_name(dtype);
    EXPECT_GT(changed, 0u);
    EXPECT_EQ(one.first_nonfinite, first_nonfinite);  // code 0x7F is NaN in every row
  }
}

// One target block over two source blocks of scales 3 and 1: the largest value (448 x 3) sets
// the target scale 3, under which the other block's value 1 has the quotient 1/3, inexact, though
// fl(1/3) * 3 rounds back to 1. The encoding under source scales is refused (nullopt).
TEST(Reencode, AnInexactQuotientIsNotTakenForExact) {
  std::vector<std::uint8_t> codes(256, 0x00);
  codes[0] = 0x7E;    // 448, in the block of scale 3
  codes[128] = 0x38;  // 1.0, in the block of scale 1
  DequantView source = grid(FormatId::kE4M3FN, 1, 256, 128, codes, {3.0f, 1.0f});
  source.grid = BlockGrid{1, 256, 1, 128};
  const DequantView structure = grid(FormatId::kE4M3FN, 1, 256, 256, std::vector<std::uint8_t>(256), {1.0f});
  ASSERT_EQ(std::nextafter(1.0 / 3.0, 0.0) * 3.0 < 1.0, true);  // the premise: 1/3 is inexact in fp64
  ASSERT_EQ((1.0 / 3.0) * 3.0, 1.0);                           // ... and its rounded product is 1
  EXPECT_FALSE(reencode::source_scaled_encoding(source, structure).has_value());
  // the same with scale 1 for both blocks: every quotient exact, the encoding is taken
  source.scale_inv = {1.0f, 1.0f};
  EXPECT_TRUE(reencode::source_scaled_encoding(source, structure).has_value());
}

TEST(ReencodePipeline, DeepSeekIntoTrainium2IsExactWithoutOddSubnormals) {
  DeepSeekInput in(false, false, "trn2", true);
  auto& [d, codes, scales, o] = in;
  const auto r = in.run();
  ASSERT_EQ(r.summary.converted, 1u);
  EXPECT_EQ(r.summary.converted_exact, 1u);
  const TensorReport& w = r.tensors.front();
  ASSERT_TRUE(w.conversion);
  EXPECT_EQ(w.conversion->from, "hf-fp8");
  EXPECT_EQ(w.conversion->path, "re-encoded");
  EXPECT_EQ(w.conversion->changed, 0u);
  LayoutOptions lo;
  lo.granularity = Granularity::block(128, 128);  // the input's blocks, kept by default
  EXPECT_EQ(output_values(d.path / "out", "trn2", lo), input_values(codes, scales));
  EXPECT_FALSE(r.tensors.back().quantized);  // lm_head kept
  // verify against the quantized input: its exact values stand for the original's
  const VerifyResult v = verify_checkpoint(d.path / "out", d.path / "in");
  EXPECT_TRUE(v.problems.empty()) << v.problems.front();
  EXPECT_EQ(v.summary.quantized, 1u);
  // the output holds the exact values; the figures compare them with their round-to-odd fp32,
  // at most one fp32 step apart (values below 1024: 2^-14)
  EXPECT_LE(v.summary.stats.max_abs_error, std::ldexp(1.0, -14));
  EXPECT_GT(v.summary.stats.sqnr_db(), 120.0);
}

TEST(ReencodePipeline, RequireExactRefusesAChangeAndWritesNothing) {
  DeepSeekInput in(false, true, "trn2", true);
  auto& [d, codes, scales, o] = in;
try {
    quantize_checkpoint(d.path / "in", d.path / "out", o);
    FAIL() << "accepted";
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("--require-exact: tensor \"model.layers.0.mlp.down_proj.weight\" (hf-fp8 -> trn2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(d.path / "out"));
  // without the flag: re-encoded, each odd subnormal rounded once
  o.require_exact = false;
  const auto r = quantize_checkpoint(d.path / "in", d.path / "out", o);
  const Conversion& c = *r.tensors.front().conversion;
  EXPECT_EQ(c.path, "re-encoded");
  std::size_t odd = 0;
  for (auto code : codes) odd += (code & 0x7F) < 0x10 && (code & 1);
  EXPECT_EQ(c.changed, odd);
  EXPECT_GT(odd, 0u);
}

TEST(ReencodePipeline, Ue8m0ScalesIntoTrainium3MxAreExact) {
  DeepSeekInput in(true, true, "trn3-mx", true);
  auto& [d, codes, scales, o] = in;
  const auto r = in.run();
  EXPECT_TRUE(r.tensors.front().conversion->exact());
  EXPECT_EQ(output_values(d.path / "out", "trn3-mx", {}), input_values(codes, scales));
}

TEST(ReencodePipeline, Fp32ScalesIntoTrainium3MxAreRequantizedOnce) {
  DeepSeekInput in(false, false, "trn3-mx", false);
  auto& [d, codes, scales, o] = in;
  const auto r = in.run();
  const Conversion& c = *r.tensors.front().conversion;
  EXPECT_EQ(c.path, "requantized");
  EXPECT_GT(c.changed, 0u);
  EXPECT_GT(c.fp32_rounded, 0u);
  // the same codes as trn3-mx's quantizer on the round-to-odd fp32 values of the exact decoding
  const auto exact = input_values(codes, scales);
  std::uint64_t rounded = 0;
  const auto f = reencode::round_to_odd_f32(exact, rounded);
  EXPECT_EQ(rounded, c.fp32_rounded);
  WeightRef w;
  w.name = "model.layers.0.mlp.down_proj.weight";
  w.module = "model.layers.0.mlp.down_proj";
  w.dtype = DType::kF32;
  w.shape = {256, 384};
  w.data = std::as_bytes(std::span<const float>(f));
  const auto want = exact_values(layout_named("trn3-mx")->quantize(w, {}).view);
  const auto got = output_values(d.path / "out", "trn3-mx", {});
  EXPECT_EQ(got, want);
  std::size_t changed = 0;
  double largest = 0;
  for (std::size_t i = 0; i < exact.size(); ++i)
    if (got[i] != exact[i]) ++changed, largest = std::max(largest, std::fabs(got[i] - exact[i]));
  EXPECT_EQ(c.changed, changed);
  EXPECT_EQ(c.max_change, largest);
  // the same bytes and report with 3 threads
  o.layout_options.threads = 3;
  const auto r3 = quantize_checkpoint(d.path / "in", d.path / "out3", o);
  EXPECT_EQ(r3.tensors.front().conversion->changed, c.changed);
  EXPECT_EQ(testing::read_raw(d.path / "out3" / "model.safetensors"), testing::read_raw(d.path / "out" / "model.safetensors"));
}

TEST(ReencodePipeline, LoudOnWhatLoadersReadSilently) {
  auto expect_error = [](const std::function<void(const std::filesystem::path&)>& mutate, const std::string& want) {
    Dir d;
    std::vector<std::uint8_t> codes;
    std::vector<float> scales;
    write_deepseek_style(d.path / "in", true, false, codes, scales);
    mutate(d.path / "in");
    QuantizeCheckpointOptions o;
    o.layout = "trn2";
    try {
      quantize_checkpoint(d.path / "in", d.path / "out", o);
      ADD_FAILURE() << "accepted; wanted " << want;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(d.path / "out"));
  };
  // a scale that is not a power of two where the config promises ue8m0
  expect_error(
      [](const std::filesystem::path& in) {
        std::vector<std::uint8_t> c;
        std::vector<float> s;
        write_deepseek_style(in, false, false, c, s);
        std::ofstream(in / "config.json") << R"({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "scale_fmt": "ue8m0"}})";
      },
      "weight_scale_inv\": scale 0 is ");
  // an FP8 weight without its scale
  expect_error(
      [](const std::filesystem::path& in) {
        const Model m = Model::open(in);
        const ModelTensor* w = m.find("model.layers.0.mlp.down_proj.weight");
        std::vector<std::byte> b(m.bytes(*w).begin(), m.bytes(*w).end());
        write_file(in / "model.safetensors", std::vector<TensorData>{{{w->info->name, DType::kF8_E4M3, w->info->shape}, b}});
      },
      "\"model.layers.0.mlp.down_proj.weight_scale_inv\" is missing");
  // a scale of the wrong shape
  expect_error(
      [](const std::filesystem::path& in) {
        const Model m = Model::open(in);
        const ModelTensor* w = m.find("model.layers.0.mlp.down_proj.weight");
        std::vector<std::byte> b(m.bytes(*w).begin(), m.bytes(*w).end()), s(4 * 6);
        write_file(in / "model.safetensors",
                   std::vector<TensorData>{{{w->info->name, DType::kF8_E4M3, w->info->shape}, b},
                                           {{"model.layers.0.mlp.down_proj.weight_scale_inv", DType::kF32, {3, 2}}, s}});
      },
      "model.layers.0.mlp.down_proj.weight_scale_inv");
  // a quant_method fp8q does not read
  expect_error([](const std::filesystem::path& in) { std::ofstream(in / "config.json") << R"({"quantization_config": {"quant_method": "gptq"}})"; },
               "quant_method is \"gptq\"");
  // FP8 weights and no config
  expect_error([](const std::filesystem::path& in) { std::ofstream(in / "config.json") << R"({"hidden_size": 384})"; },
               "is F8_E4M3 and config.json has no quantization_config");
}

}  // namespace
}  // namespace fp8q::checkpoint
