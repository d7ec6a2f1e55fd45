// The reader of a quantized input's layout (checkpoint/src/reencode/source.hpp,
// layout_from_texts) over config.json and hf_quant_config.json texts as published producers
// write them and 20000 deterministic mutations of them: it names a layout, finds none, or
// refuses with PipelineError / FormatError; nothing else is thrown and nothing crashes (the
// sanitizer builds run this too). Mutations, 1 to 4 per text from a fixed-seed splitmix64
// stream: bit flips, byte overwrites, insertions, deletions, JSON tokens and the keys the reader
// looks at spliced in, truncation, duplication of a slice.
#include <gtest/gtest.h>

#include <iterator>

#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "mutation_util.hpp"
#include "reencode/source.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::SplitMix64;

// (name, text): config.json texts, and hf_quant_config.json texts (names starting "hfq_").
const std::vector<std::pair<std::string, std::string>> kSeeds = {
    {"deepseek_v3",
     R"({"architectures": ["DeepseekV3ForCausalLM"], "torch_dtype": "bfloat16", "quantization_config": )"
     R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}})"},
    {"deepseek_v31_ue8m0",
     R"({"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", )"
     R"("scale_fmt": "ue8m0", "weight_block_size": [128, 128]}})"},
    {"ct_fp8_block",
     R"({"quantization_config": {"config_groups": {"group_0": {"input_activations": {"dynamic": true, "num_bits": 8, )"
     R"("strategy": "group", "group_size": 128, "type": "float"}, "targets": ["Linear"], "weights": {"block_structure": )"
     R"([128, 128], "dynamic": false, "num_bits": 8, "strategy": "block", "symmetric": true, "type": "float"}}}, )"
     R"("format": "float-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors", )"
     R"("quantization_status": "compressed"}})"},
    {"ct_mxfp4",
     R"({"quantization_config": {"config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, )"
     R"("strategy": "group", "group_size": 32, "type": "float"}}}, "format": "mxfp4-pack-quantized", )"
     R"("quant_method": "compressed-tensors"}})"},
    {"modelopt_in_config", R"({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}})"},
    {"llama31_fbgemm", R"({"quantization_config": {"activation_scale_ub": 1200.0, "modules_to_not_convert": )"
                       R"(["lm_head"], "quant_method": "fbgemm_fp8"}})"},
    {"gpt_oss", R"({"architectures": ["GptOssForCausalLM"], "quantization_config": {"quant_method": "mxfp4", )"
                R"("modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "lm_head"]}})"},
    {"hfq_nvfp4",
     R"({"producer": {"name": "modelopt", "version": "0.33.0"}, "quantization": {"quant_algo": "NVFP4", )"
     R"("kv_cache_quant_algo": null, "group_size": 16, "exclude_modules": ["lm_head"]}})"},
    {"hfq_fp8",  // what ModelOpt 0.47's export_hf_checkpoint wrote for FP8_DEFAULT_CFG
     R"({"producer": {"name": "modelopt", "version": "0.47.0"}, "quantization": {"quant_algo": "FP8", )"
     R"("kv_cache_quant_algo": null, "exclude_modules": ["lm_head", "model.embed_tokens"]}})"},
};

const char* const kTokens[] = {"\"", "{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "1e308", "128",
                               "\"quant_method\"", "\"fp8\"", "\"mxfp4\"", "\"fbgemm_fp8\"", "\"modelopt\"",
                               "\"compressed-tensors\"", "\"format\"", "\"config_groups\"", "\"weights\"",
                               "\"strategy\"", "\"block\"", "\"scale_fmt\"", "\"in_features\"", "\"quant_algo\"",
                               "\"quantization\"", "\"FP8\"", "\"NVFP4\"", "\xff", "{}", "[]"};

std::string mutate(std::string s, SplitMix64& rng) { return testing::mutate_text(std::move(s), rng, kTokens); }

// true: a layout was named; false: none, or refused with the reader's errors.
bool one_input(const std::string& name, const std::string& text) {
  const bool hfq = name.starts_with("hfq_");
  try {
    const auto s = reencode::layout_from_texts({}, hfq ? std::nullopt : std::optional<std::string>(text),
                                               hfq ? std::optional<std::string>(text) : std::nullopt);
    if (s && s->layout == nullptr) throw std::logic_error("a source without a layout");
    return s.has_value();
  } catch (const PipelineError&) {
    return false;
  } catch (const FormatError&) {
    return false;
  }
}

TEST(SourceMutation, SeedsAreRead) {
  for (const auto& [name, text] : kSeeds) EXPECT_TRUE(one_input(name, text)) << name;
}

TEST(SourceMutation, TwentyThousandMutationsOnlyNamedErrors) {
  SplitMix64 rng{0x5EEDull};
  std::size_t accepted = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& [name, text] = kSeeds[rng.below(kSeeds.size())];
    const std::string input = mutate(text, rng);
    try {
      (one_input(name, input) ? accepted : rejected)++;
    } catch (const std::exception& e) {
      FAIL() << "mutation " << i << " of " << name << ": " << e.what() << "\n" << input;
    }
  }
  EXPECT_GT(accepted, 500u);  // both outcomes occur: the mutations reach past the first check
  EXPECT_GT(rejected, 1000u);
}

}  // namespace
}  // namespace fp8q::checkpoint
