// The pipeline's NaN / Inf check (checkpoint/src/pipeline/quantize.cpp): with measuring on it
// rides on the measuring pass (whose non-finite count triggers the scan), with it off a scan
// runs first; either way the error names the same first element, and nothing is left behind.
#include <gtest/gtest.h>

#include "quantize_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::ScratchDir;

TEST(NonfiniteCheck, SameErrorWithAndWithoutMeasuring) {
  for (const char* layout : {"hf-fp8", "ct-fp8", "ct-mxfp8", "ct-mxfp4", "ct-nvfp4", "trn2", "trn3-mx"}) {
    for (bool measure : {true, false}) {
      ScratchDir dir;
      auto model = testing::small_model();
      auto& w = model[4];  // model.layers.0.mlp.gate_proj.weight, BF16 [300, 160]
      // hf-fp8 quantizes only whole 128 x 128 blocks: there the weight is [384, 256]
      if (std::string_view(layout) == "hf-fp8")
        w = testing::make_tensor(w.name, DType::kBF16, {384, 256}, testing::random_values(384 * 256, 5));
      const std::size_t cols = w.shape[1];
      ConvertOptions keep_inf;
      keep_inf.overflow = Overflow::kInfOrNan;
      const auto inf = static_cast<std::uint16_t>(encode_f32(INFINITY, kBF16, keep_inf));
      const auto nan = static_cast<std::uint16_t>(encode_f32(std::nanf(""), kBF16, {}));
      std::memcpy(w.bytes.data() + 2 * 40001, &inf, 2);  // the first
      std::memcpy(w.bytes.data() + 2 * 47000, &nan, 2);
      testing::write_model_file(dir / "m.safetensors", model);
      QuantizeCheckpointOptions o;
      o.layout = layout;
      o.measure = measure;
      try {
        quantize_checkpoint(dir / "m.safetensors", dir / "out", o);
        ADD_FAILURE() << layout << ": accepted";
      } catch (const PipelineError& e) {
        const std::string want = "tensor \"model.layers.0.mlp.gate_proj.weight\": element 40001 (row " +
                                 std::to_string(40001 / cols) + ", column " + std::to_string(40001 % cols) + ") is +Inf";
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
            << layout << " measure " << measure << ": " << e.what();
      }
      EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"}) << layout;
    }
  }
}

// Finite weights: the measuring pass counts nothing non-finite, so no scan and no error.
TEST(NonfiniteCheck, FiniteWeightsPassWithMeasuringOn) {
  ScratchDir dir;
  testing::write_model_file(dir / "m.safetensors", testing::small_model());
  QuantizeCheckpointOptions o;
  o.layout = "ct-fp8";
  const auto r = quantize_checkpoint(dir / "m.safetensors", dir / "out", o);
  EXPECT_EQ(r.summary.stats.nonfinite, 0u);
  EXPECT_GT(r.summary.stats.count, 0u);
}

}  // namespace
}  // namespace fp8q::checkpoint
