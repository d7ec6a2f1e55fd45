// Conversion benchmarks (numerics/bulk.hpp), each against the copy kernel of the same bytes
// and the scalar reference path, measured in the same run.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"
#include "data.hpp"
#include "registry.hpp"

namespace fp8q::bench {
namespace {

const std::vector<std::uint8_t>& e4m3fn_data() {
  static const std::vector<std::uint8_t> v = [] {
    const auto& f = f32_data();
    std::vector<std::uint8_t> x(f.size());
    ConvertOptions o;
    o.scale = kScale;
    convert(f, x, kE4M3FN, o);
    return x;
  }();
  return v;
}

struct Conversion {
  std::string name;        // e.g. "f32_to_e4m3fn/scaled_rne_sat"
  std::string copy;        // copy baseline family, e.g. "copy/4B_to_1B"
  const Format* from;
  const Format* to;
  ConvertOptions options;
};

std::span<const std::byte> input_of(const Format& from) {
  if (from == kF32) return std::as_bytes(std::span(f32_data()));
  if (from == kBF16) return std::as_bytes(std::span(bf16_data()));
  return std::as_bytes(std::span(e4m3fn_data()));
}

void run_bulk(benchmark::State& state, const Conversion& c, int threads) {
  const auto in = input_of(*c.from);
  const std::size_t n = in.size() / c.from->storage_bytes();
  std::vector<std::byte> out(n * c.to->storage_bytes());
  for (auto _ : state) {
    convert(in, *c.from, out, *c.to, c.options, {threads, std::nullopt});
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(in.size() + out.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetLabel(std::string(isa_name(active_isa())));
}

// The scalar reference, element by element (what every fast path is checked against).
void run_scalar(benchmark::State& state, const Conversion& c) {
  const auto in = input_of(*c.from);
  const std::size_t ib = c.from->storage_bytes(), ob = c.to->storage_bytes(), n = in.size() / ib;
  std::vector<std::byte> out(n * ob);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t code = 0;
      std::memcpy(&code, in.data() + i * ib, ib);
      const std::uint64_t r = convert_one(code, *c.from, *c.to, c.options, i).code;
      std::memcpy(out.data() + i * ob, &r, ob);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(in.size() + out.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

}  // namespace

void register_convert() {
  ConvertOptions scaled;
  scaled.scale = kScale;
  ConvertOptions sr;
  sr.rounding = Rounding::kStochastic;
  sr.seed = 2026;
  const std::vector<Conversion> conversions = {
      {"f32_to_e4m3fn/scaled_rne_sat", "copy/4B_to_1B", &kF32, &kE4M3FN, scaled},
      {"bf16_to_e4m3fn/rne_sat", "copy/2B_to_1B", &kBF16, &kE4M3FN, {}},
      {"e4m3fn_to_f32", "copy/1B_to_4B", &kE4M3FN, &kF32, {}},
      {"f32_to_e5m2/sr_sat", "copy/4B_to_1B", &kF32, &kE5M2, sr},
  };
  for (const Conversion& c : conversions) {
    const std::string scalar = "scalar/" + c.name;
    add_case(scalar, {}, [c](benchmark::State& s) { run_scalar(s, c); });
    for (int t : {1, 2}) {
      const std::string threads = "/threads:" + std::to_string(t);
      add_case("convert/" + c.name + threads, {c.copy + threads, scalar},
               [c, t](benchmark::State& s) { run_bulk(s, c, t); });
    }
  }
}

}  // namespace fp8q::bench
