// Hostile and malformed input to quantize_checkpoint(): each case throws an error whose
// message names the problem (file, tensor, field or element), and leaves nothing behind:
// no OUT_DIR, no staging directory, the input unchanged.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "fp8q/checkpoint/stop.hpp"
#include "quantize_test_util.hpp"
#include "thread_counts.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::ScratchDir;

struct Hostile {
  std::string name;
  std::function<void(const std::filesystem::path& in)> make;  // builds the bad model dir `in`
  std::string message;                                         // part of the error message
  QuantizeCheckpointOptions options = {};
};

std::string valid_file_bytes() {
  ScratchDir d;
  testing::write_model_file(d / "m.safetensors", testing::small_model());
  return testing::read_raw(d / "m.safetensors");
}

void model_dir_with(const std::filesystem::path& in, const std::string& safetensors) {
  std::filesystem::create_directory(in);
  testing::write_config(in);
  testing::write_raw(in / "model.safetensors", safetensors);
}

std::vector<Hostile> cases() {
  using testing::image;
  using testing::image_with_data;
  using testing::length_field;
  std::vector<Hostile> c;
  auto file = [](std::string bytes) { return [bytes](const std::filesystem::path& in) { model_dir_with(in, bytes); }; };
  c.push_back({"header_length_beyond_file", file(length_field(1000) + "{}"), "beyond"});
  c.push_back({"header_over_100MB", file(length_field(100'000'001) + std::string(64, ' ')), "100000000"});
  c.push_back({"invalid_json", file(image(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})", "abcd")), "JSON"});
  c.push_back({"invalid_utf8", file(image_with_data("{\"w\xff\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4)), "UTF-8"});
  c.push_back({"offsets_out_of_range", file(image_with_data(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4)), "w"});
  c.push_back({"offsets_overlap",
               file(image_with_data(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12)),
               "overlap"});
  c.push_back({"offsets_gap",
               file(image_with_data(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12)),
               "gap"});
  c.push_back({"dtype_vs_bytes", file(image_with_data(R"({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 8]}})", 8)), "w"});
  c.push_back({"shape_overflow",
               file(image_with_data(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 8]}})", 8)),
               "overflow"});
  c.push_back({"duplicate_names",
               file(image_with_data(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})", 2)),
               "duplicate"});
  c.push_back({"index_outside_dir",
               [](const std::filesystem::path& in) {
                 std::filesystem::create_directory(in);
                 testing::write_config(in);
                 testing::write_model_file(in.parent_path() / "outside.safetensors", testing::small_model());
                 std::ofstream(in / "model.safetensors.index.json")
                     << R"({"weight_map": {"lm_head.weight": "../outside.safetensors"}})";
               },
               "../outside.safetensors"});
  c.push_back({"index_link_outside_dir",
               [](const std::filesystem::path& in) {
                 std::filesystem::create_directory(in);
                 testing::write_config(in);
                 testing::write_model_file(in.parent_path() / "outside.safetensors", testing::small_model());
                 std::filesystem::create_symlink(in.parent_path() / "outside.safetensors", in / "shard.safetensors");
                 std::ofstream(in / "model.safetensors.index.json") << R"({"weight_map": {"lm_head.weight": "shard.safetensors"}})";
               },
               "outside the model directory"});
  c.push_back({"index_names_missing_tensor",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 nlohmann::json idx;
                 for (const auto& t : testing::small_model()) idx["weight_map"][t.name] = "model.safetensors";
                 idx["weight_map"]["ghost.weight"] = "model.safetensors";
                 std::ofstream(in / "model.safetensors.index.json") << idx.dump();
               },
               "ghost.weight"});
  c.push_back({"index_duplicate_key",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 std::ofstream(in / "model.safetensors.index.json")
                     << R"({"weight_map": {"a": "model.safetensors", "a": "model.safetensors"}})";
               },
               "twice"});
  auto with_bad_value = [](float bad, std::size_t at) {
    return [bad, at](const std::filesystem::path& in) {
      auto model = testing::small_model();
      auto& w = model[4];  // model.layers.0.mlp.gate_proj.weight, BF16 [300, 160]
      ConvertOptions keep_inf;
      keep_inf.overflow = Overflow::kInfOrNan;  // saturate (the default) would store -max, not -Inf
      const auto code = static_cast<std::uint16_t>(encode_f32(bad, kBF16, keep_inf));
      std::memcpy(w.bytes.data() + 2 * at, &code, 2);
      std::filesystem::create_directory(in);
      testing::write_config(in);
      testing::write_model_file(in / "model.safetensors", model);
    };
  };
  c.push_back({"nan_in_weight", with_bad_value(std::nanf(""), 1234), "element 1234 (row 7, column 114) is NaN"});
  c.push_back({"inf_in_weight", with_bad_value(-INFINITY, 5), "element 5 (row 0, column 5) is -Inf"});
  c.push_back({"config_not_json",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 std::ofstream(in / "config.json") << "{\"a\": ";
               },
               "config.json"});
  c.push_back({"config_nested_100000_deep",  // ~200 KB: every recursive walk of it overflowed the stack
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 std::ofstream(in / "config.json") << "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
               },
               "nested 100001 deep (at most 64"});
  c.push_back({"config_nested_65_deep_in_a_string_free_way",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 // brackets inside strings do not count: 64 levels of objects plus one array
                 std::string j;
                 for (int i = 0; i < 64; ++i) j += "{\"k[{\": ";
                 j += "[1]";
                 for (int i = 0; i < 64; ++i) j += "}";
                 std::ofstream(in / "config.json") << j;
               },
               "nested 65 deep"});
  {
    Hostile h{"name_too_long_for_ignore_patterns",  // std::regex recursed once per byte of it
              file(image_with_data("{\"" + std::string(50000, 'a') +
                                       ".weight\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [0, 8]}}",
                                   8)),
              "bytes: too long to match --ignore patterns against (at most 4096)"};
    h.options.ignore = {".*lm_head"};
    c.push_back(h);
  }
  // nlohmann's lexer took a NUL for the end of the input, and skips a byte-order mark
  c.push_back({"header_with_nul_then_garbage",
               file(image(std::string(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})") + '\0' + " {{{", "a")),
               "a NUL byte at header byte 60"});
  c.push_back({"header_with_byte_order_mark",
               file(image("\xEF\xBB\xBF" R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", "a")),
               "byte-order mark"});
  c.push_back({"shard_missing",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 std::filesystem::remove(in / "model.safetensors");
                 nlohmann::json idx;
                 for (const auto& t : testing::small_model()) idx["weight_map"][t.name] = "model.safetensors";
                 std::ofstream(in / "model.safetensors.index.json") << idx.dump();
               },
               "shard \"model.safetensors\" (tensor \"lm_head.weight\" and 9 more) does not exist"});
  // a quantized input fp8q cannot read, rather than its codes read as high-precision weights
  c.push_back({"config_quantized_without_groups",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 std::ofstream(in / "config.json") << R"({"quantization_config": {"quant_method": "compressed-tensors"}})";
               },
               "quantization_config.config_groups has no group with weights"});
  c.push_back({"config_unknown_quant_method",
               [](const std::filesystem::path& in) {
                 model_dir_with(in, valid_file_bytes());
                 std::ofstream(in / "config.json") << R"({"quantization_config": {"quant_method": "awq"}})";
               },
               "quantization_config.quant_method is \"awq\""});
  c.push_back({"fp8_weight",
               file(image_with_data(R"({"l.weight": {"dtype": "F8_E4M3", "shape": [2, 2], "data_offsets": [0, 4]}})", 4)),
               "tensor \"l.weight\" is F8_E4M3 and config.json has no quantization_config"});
  for (auto& h : c) h.options.layout = "ct-fp8";
  return c;
}

class HostileInput : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileInput, ClearErrorAndNothingLeftBehind) {
  const Hostile& h = GetParam();
  ScratchDir dir;
  h.make(dir / "in");
  const auto before = dir.entries();
  std::map<std::string, std::string> input;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "in"))
    if (e.is_regular_file()) input[e.path().string()] = testing::read_raw(e.path());
  try {
    quantize_checkpoint(dir / "in", dir / "out", h.options);
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(h.message), std::string::npos) << e.what();
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find(h.message), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), before);  // no OUT_DIR, no staging directory
  for (const auto& [path, bytes] : input) EXPECT_EQ(testing::read_raw(path), bytes) << path;
}

INSTANTIATE_TEST_SUITE_P(All, HostileInput, ::testing::ValuesIn(cases()),
                         [](const auto& i) { return i.param.name; });

TEST(HostileOptions, AllowNonfinitePassesNaNThrough) {
  ScratchDir dir;
  auto model = testing::small_model();
  const auto nan = static_cast<std::uint16_t>(encode_f32(std::nanf(""), kBF16, {}));
  std::memcpy(model[4].bytes.data() + 20, &nan, 2);
  testing::write_model_file(dir / "m.safetensors", model);
  QuantizeCheckpointOptions o;
  o.layout = "ct-fp8";
  o.allow_nonfinite = true;
  const auto r = quantize_checkpoint(dir / "m.safetensors", dir / "out", o);
  EXPECT_GT(r.tensors[4].stats.nonfinite, 0u);
}

// Two bad weights: the error names the first one in input order, for every thread count and
// with measuring on or off, although with 2+ threads weight i's job (write, error figures,
// NaN/Inf check) runs while weight i + 1 is quantized; and nothing is left behind.
TEST(HostileOptions, FirstBadWeightIsReportedWhateverTheOverlap) {
  ScratchDir dir;
  auto model = testing::small_model();
  ConvertOptions keep_inf;
  keep_inf.overflow = Overflow::kInfOrNan;
  const auto minus_inf = static_cast<std::uint16_t>(encode_f32(-INFINITY, kF16, keep_inf));
  std::memcpy(model[3].bytes.data() + 2 * 7, &minus_inf, 2);  // o_proj, F16 [160, 160]
  const auto nan = static_cast<std::uint16_t>(encode_f32(std::nanf(""), kBF16, {}));
  std::memcpy(model[4].bytes.data() + 2 * 1234, &nan, 2);  // gate_proj, the next weight
  testing::write_model_file(dir / "in.safetensors", model);
  const auto before = dir.entries();
  for (bool measure : {true, false})
    for (int threads : test::kThreadCounts) {
      QuantizeCheckpointOptions o;
      o.layout = "ct-fp8";
      o.measure = measure;
      o.layout_options.threads = threads;
      try {
        quantize_checkpoint(dir / "in.safetensors", dir / "out", o);
        ADD_FAILURE() << "accepted";
      } catch (const PipelineError& e) {
        EXPECT_NE(std::string(e.what()).find("o_proj.weight\": element 7 (row 0, column 7) is -Inf"), std::string::npos)
            << e.what() << " (threads " << threads << ", measure " << measure << ")";
      }
      EXPECT_EQ(dir.entries(), before);
    }
}

// A stop request between weights: Stopped unwinds the pipeline, and neither OUT_DIR nor the
// staging directory is left.
TEST(HostileOptions, AStopRequestLeavesNoOutput) {
  ScratchDir dir;
  testing::write_model_file(dir / "in.safetensors", testing::small_model());
  const auto before = dir.entries();
  QuantizeCheckpointOptions o;
  o.layout = "ct-fp8";
  request_stop(2);
  EXPECT_THROW(quantize_checkpoint(dir / "in.safetensors", dir / "out", o), Stopped);
  clear_stop();
  EXPECT_EQ(dir.entries(), before);
  quantize_checkpoint(dir / "in.safetensors", dir / "out", o);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "model.safetensors"));
}

// A stop request from another thread while the pipeline runs on 2+ threads (write-behind in
// flight): the run either finishes or throws Stopped, and OUT_DIR is then complete or absent.
// Under ThreadSanitizer (scripts/sanitize.sh thread) this is the stop request's race check.
TEST(HostileOptions, AStopRequestFromAnotherThreadLeavesCompleteOrNoOutput) {
  ScratchDir dir;
  testing::write_model_file(dir / "in.safetensors", testing::small_model());
  const auto before = dir.entries();
  int stopped = 0;
  for (int threads : test::kThreadCounts)
    for (int delay_us : {0, 200, 2000}) {
      QuantizeCheckpointOptions o;
      o.layout = "ct-fp8";
      o.layout_options.threads = threads;
      std::thread stopper([delay_us] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        request_stop(15);
      });
      bool finished = false;
      try {
        quantize_checkpoint(dir / "in.safetensors", dir / "out", o);
        finished = true;
      } catch (const Stopped& e) {
        EXPECT_EQ(e.signal(), 15);
        ++stopped;
      }
      stopper.join();
      clear_stop();
      if (finished) {
        EXPECT_TRUE(std::filesystem::exists(dir / "out" / "model.safetensors")) << threads << " threads";
        std::filesystem::remove_all(dir / "out");
      }
      EXPECT_EQ(dir.entries(), before) << threads << " threads, stop after " << delay_us << " us";
    }
  RecordProperty("stopped_runs", stopped);  // how many of the 12 the request reached in time
}

// "." names an existing directory (the current one), which cannot be renamed over: refused
// before any work.
TEST(HostileOptions, OutputDirDotIsRefusedUpFront) {
  ScratchDir dir;
  testing::write_model_file(dir / "in.safetensors", testing::small_model());
  QuantizeCheckpointOptions o;
  o.layout = "hf-fp8";
  o.force = true;
  for (const char* out : {".", "..", "sub/.."}) {
    try {
      quantize_checkpoint(dir / "in.safetensors", dir / out, o);
      ADD_FAILURE() << out << " accepted";
    } catch (const PipelineError& e) {
      EXPECT_NE(std::string(e.what()).find("give the new directory's own name"), std::string::npos) << e.what();
    }
  }
}

TEST(HostileOptions, OutputDirWithTrailingSeparators) {
  ScratchDir dir;
  testing::write_model_file(dir / "in.safetensors", testing::small_model());
  QuantizeCheckpointOptions o;
  o.layout = "hf-fp8";
  const std::filesystem::path out = (dir / "out").string() + "//";  // names the directory out
  quantize_checkpoint(dir / "in.safetensors", out, o);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "model.safetensors"));
  EXPECT_THROW(quantize_checkpoint(dir / "in.safetensors", out, o), PipelineError);  // exists
  o.force = true;
  quantize_checkpoint(dir / "in.safetensors", out, o);  // replaced, and nothing else left
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"in.safetensors", "out"}));
}

TEST(HostileOptions, ExistingOutputNeedsForceAndOverlapIsRefused) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "in");
  testing::write_model_file(dir / "in" / "model.safetensors", testing::small_model());
  testing::write_config(dir / "in");
  std::filesystem::create_directory(dir / "out");
  testing::write_raw(dir / "out" / "keep.txt", "x");
  QuantizeCheckpointOptions o;
  o.layout = "hf-fp8";
  EXPECT_THROW(quantize_checkpoint(dir / "in", dir / "out", o), PipelineError);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "keep.txt"));
  o.force = true;
  quantize_checkpoint(dir / "in", dir / "out", o);
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "keep.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "model.safetensors"));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"in", "out"}));
  // OUT_DIR = IN, or inside it: refused even with --force
  EXPECT_THROW(quantize_checkpoint(dir / "in", dir / "in", o), PipelineError);
  EXPECT_THROW(quantize_checkpoint(dir / "in", dir / "in" / "sub", o), PipelineError);
  EXPECT_TRUE(std::filesystem::exists(dir / "in" / "model.safetensors"));
  o.layout = "nope";
  EXPECT_THROW(quantize_checkpoint(dir / "in", dir / "x", o), PipelineError);
  o.layout = "hf-fp8";
  o.layout_options.granularity = Granularity::row();
  EXPECT_THROW(quantize_checkpoint(dir / "in", dir / "x", o), PipelineError);
  o.layout_options.granularity.reset();
  for (Isa isa : kAllIsas)
    if (!isa_supported(isa)) {  // a forced kernel path this CPU (or build) lacks
      o.layout_options.isa = isa;
      try {
        quantize_checkpoint(dir / "in", dir / "x", o);
        ADD_FAILURE() << "no error";
      } catch (const PipelineError& e) {
        EXPECT_NE(std::string(e.what()).find("LayoutOptions::isa"), std::string::npos) << e.what();
      }
    }
  o.layout_options.isa.reset();
  o.ignore = {"("};
  EXPECT_THROW(quantize_checkpoint(dir / "in", dir / "x", o), PipelineError);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"in", "out"}));
}

}  // namespace
}  // namespace fp8q::checkpoint
