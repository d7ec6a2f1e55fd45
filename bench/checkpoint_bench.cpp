// Checkpoint quantization (checkpoint/pipeline.hpp) against copying the same file in the
// same run: a generated BF16 checkpoint of FP8Q_BENCH_CHECKPOINT_MIB MiB (default 1024:
// 4096 x 4096 weights, 32 MiB each) quantized to hf-fp8 with 2 threads, report included,
// written to a fresh directory each iteration. Both read the input from the page cache (the
// file was just written) and write to the same file system. The label carries the process's
// peak resident memory (getrusage ru_maxrss) and the largest tensor: the pipeline's target is
// peak RSS <= 256 MiB + the largest tensor.
// A quantized input converted (docs/checkpoints.md, "Quantized inputs"): a generated
// DeepSeek-V3-style checkpoint of FP8Q_BENCH_FP8_CHECKPOINT_MIB MiB (default 2048: 4096 x 4096
// e4m3fn weights with F32 scale_inv per 128 x 128 block, config.json quant_method "fp8") into
// trn2 and into trn3-mx with 2 threads, against copying its file.
// The error figures alone (measure_error) of one 4096 x 4096 BF16 weight quantized by hf-fp8
// (128 x 128 blocks) and by trn3-mx (a multiplier per element), each on the active ISA and on
// the generic path, against reading memory (baseline/read): bytes = the BF16 original's.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "fp8q/checkpoint/error_stats.hpp"
#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "data.hpp"
#include "registry.hpp"

namespace fp8q::bench {
namespace {

namespace fs = std::filesystem;
namespace ck = fp8q::checkpoint;

constexpr std::uint64_t kRows = 4096, kCols = 4096;  // one weight: 32 MiB of BF16

struct Checkpoint {
  fs::path dir, file;
  std::uint64_t bytes = 0, largest = kRows * kCols * 2;
  Checkpoint() {
    const char* env = std::getenv("FP8Q_BENCH_CHECKPOINT_MIB");
    const std::uint64_t mib = env ? std::strtoull(env, nullptr, 10) : 1024;
    const std::uint64_t count = std::max<std::uint64_t>(1, (mib << 20) / (kRows * kCols * 2));
    dir = fs::temp_directory_path() / ("fp8q-bench-ckpt-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    file = dir / "model.safetensors";
    std::vector<ck::TensorSpec> specs;
    for (std::uint64_t i = 0; i < count; ++i)
      specs.push_back({"model.layers." + std::to_string(i) + ".mlp.up_proj.weight", ck::DType::kBF16, {kRows, kCols}});
    ck::Writer w(file, specs);
    // BF16 values of a normal-ish spread from a xorshift stream (sign, exponent 2^-8..2^-1, mantissa)
    std::vector<std::uint16_t> row(kCols);
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    for (std::uint64_t i = 0; i < count * kRows; ++i) {
      for (auto& v : row) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        v = static_cast<std::uint16_t>((s & 0x8000) | ((119 + (s >> 16) % 7) << 7) | ((s >> 24) & 0x7F));
      }
      w.write(std::as_bytes(std::span(row)));
    }
    w.commit();
    bytes = fs::file_size(file);
  }
  ~Checkpoint() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// The DeepSeek-style FP8 checkpoint: random e4m3fn codes (no NaN) and scales of 1e-4 .. 1e-2.
struct Fp8Checkpoint {
  fs::path dir, file;
  std::uint64_t bytes = 0, largest = kRows * kCols;
  Fp8Checkpoint() {
    const char* env = std::getenv("FP8Q_BENCH_FP8_CHECKPOINT_MIB");
    const std::uint64_t mib = env ? std::strtoull(env, nullptr, 10) : 2048;
    const std::uint64_t count = std::max<std::uint64_t>(1, (mib << 20) / (kRows * kCols));
    dir = fs::temp_directory_path() / ("fp8q-bench-fp8-" + std::to_string(::getpid()));
    fs::create_directories(dir / "in");
    file = dir / "in" / "model.safetensors";
    std::vector<ck::TensorSpec> specs;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string m = "model.layers." + std::to_string(i) + ".mlp.up_proj";
      specs.push_back({m + ".weight", ck::DType::kF8_E4M3, {kRows, kCols}});
      specs.push_back({m + ".weight_scale_inv", ck::DType::kF32, {kRows / 128, kCols / 128}});
    }
    ck::Writer w(file, specs);
    std::vector<std::uint8_t> row(kCols);
    std::vector<float> scales((kRows / 128) * (kCols / 128));
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    auto next = [&] { return s ^= s << 13, s ^= s >> 7, s ^= s << 17; };
    for (std::uint64_t i = 0; i < count; ++i) {
      for (std::uint64_t r = 0; r < kRows; ++r) {
        for (auto& c : row) {
          c = static_cast<std::uint8_t>(next() >> 32);
          if ((c & 0x7F) == 0x7F) c ^= 1;
        }
        w.write(std::as_bytes(std::span(row)));
      }
      for (auto& x : scales) x = 1e-4f + static_cast<float>(next() >> 40) * (1e-2f / 16777216.0f);
      w.write(std::as_bytes(std::span(scales)));
    }
    w.commit();
    std::FILE* config = std::fopen((dir / "in" / "config.json").c_str(), "w");
    std::fputs(R"({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", )"
               R"("activation_scheme": "dynamic", "weight_block_size": [128, 128]}})",
               config);
    std::fclose(config);
    bytes = fs::file_size(file);
  }
  ~Fp8Checkpoint() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const Fp8Checkpoint& fp8_checkpoint() {
  static const Fp8Checkpoint c;
  return c;
}

const Checkpoint& checkpoint() {
  static const Checkpoint c;  // generated once per process
  return c;
}

template <class C>
std::string rss_label(const C& c) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return "peak_rss=" + std::to_string(u.ru_maxrss / 1024) + "MiB largest_tensor=" + std::to_string(c.largest >> 20) +
         "MiB checkpoint=" + std::to_string(c.bytes >> 20) + "MiB";
}

void run_quantize(benchmark::State& state, int threads) {
  const Checkpoint& c = checkpoint();
  ck::QuantizeCheckpointOptions o;
  o.layout = "hf-fp8";
  o.layout_options.threads = threads;
  o.force = true;
  const fs::path out = c.dir / "out";
  for (auto _ : state) {
    const auto r = ck::quantize_checkpoint(c.file, out, o);
    benchmark::DoNotOptimize(r.summary.out_bytes);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.bytes));
  state.SetLabel(rss_label(c));
}

void run_convert(benchmark::State& state, const char* layout) {
  const Fp8Checkpoint& c = fp8_checkpoint();
  ck::QuantizeCheckpointOptions o;
  o.layout = layout;
  o.layout_options.threads = 2;
  o.force = true;
  const fs::path out = c.dir / "out";
  for (auto _ : state) {
    const auto r = ck::quantize_checkpoint(c.dir / "in", out, o);
    benchmark::DoNotOptimize(r.summary.out_bytes);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.bytes));
  state.SetLabel(rss_label(c));
}

template <class C>
void run_copy(benchmark::State& state, const C& c) {
  const fs::path out = c.dir / "copy.safetensors";
  for (auto _ : state) fs::copy_file(c.file, out, fs::copy_options::overwrite_existing);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.bytes));
  state.SetLabel(rss_label(c));
}

// One weight of bf16_data() and its quantization by `layout`.
struct Measured {
  std::span<const std::byte> original;
  ck::QuantizedWeight q;
  explicit Measured(const char* layout) {
    const auto& x = bf16_data();
    original = std::as_bytes(std::span(x.data(), kRows * kCols));
    ck::WeightRef w{"w.weight", "w", ck::DType::kBF16, {kRows, kCols}, original, std::nullopt};
    q = ck::layout_named(layout)->quantize(w, ck::LayoutOptions{});
  }
};

void run_measure(benchmark::State& state, const Measured& m, std::optional<Isa> isa) {
  for (auto _ : state) benchmark::DoNotOptimize(ck::measure_error(m.original, ck::DType::kBF16, m.q.view, 1, isa).count);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(m.original.size()));
}

}  // namespace

void register_checkpoint() {
  for (const char* layout : {"hf-fp8", "trn3-mx"}) {
    const std::string name = "checkpoint/measure_error_" + std::string(layout);
    auto measured = [layout]() -> const Measured& {  // built on first use, once per layout
      static std::map<std::string, Measured> made;
      return made.try_emplace(layout, layout).first->second;
    };
    add_case(name + "_generic", {"baseline/read"},
             [measured](benchmark::State& s) { run_measure(s, measured(), Isa::kGeneric); });
    add_case(name, {"baseline/read", name + "_generic"},
             [measured](benchmark::State& s) { run_measure(s, measured(), std::nullopt); });
  }
  add_case("checkpoint/copy_file", {}, [](benchmark::State& s) { run_copy(s, checkpoint()); });
  add_case("checkpoint/copy_fp8_file", {}, [](benchmark::State& s) { run_copy(s, fp8_checkpoint()); });
  for (const char* layout : {"trn2", "trn3-mx"})
    add_case("checkpoint/convert_hf_fp8_to_" + std::string(layout) + "/threads:2", {"checkpoint/copy_fp8_file"},
             [layout](benchmark::State& s) { run_convert(s, layout); });
  add_case("checkpoint/quantize_hf_fp8/threads:2", {"checkpoint/copy_file"},
           [](benchmark::State& s) { run_quantize(s, 2); });
}

}  // namespace fp8q::bench
