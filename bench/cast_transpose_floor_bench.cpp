// What the fused cast + transpose computes, kernel by kernel, on data that stays in L1: the
// floor of its time on one core, with no memory traffic at all. Each case works through
// 32 Mi elements (as quant/cast_bf16_scaled does from DRAM), in pieces of 512 bf16 elements,
// the pieces cast_transpose.cpp converts; eight pieces of input and of codes are reused so
// that everything is an L1 hit. The kernels are the library's own (internal headers, this
// file only):
//   floor/convert_l1     the narrowing kernel (bf16 -> e4m3fn, scale kScale, nearest-even)
//   floor/transpose_l1   the tile-column transpose of those codes (8 rows x 64 columns a piece)
//   floor/amax_l1        the piece's amax (max_abs kernel)
//   floor/fused_work_l1  all three per piece, as the fused pass runs them
// Bytes are counted as the single cast's (input + one copy of the codes), so each ratio to
// quant/cast_bf16_scaled/threads:1 is a time ratio: fused_work_l1's ratio is the most the fused
// pass could reach if its memory traffic (the q and qt stores, the chunk buffer) were free.
#include <cstdint>
#include <span>
#include <vector>

#include "data.hpp"
#include "dispatch.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/max_abs_kernels.hpp"
#include "isa/narrow.hpp"
#include "isa/transpose_kernels.hpp"
#include "registry.hpp"

namespace fp8q::bench {
namespace {

constexpr std::size_t kPiece = 512, kSlots = 8, kPieces = (std::size_t{32} << 20) / kPiece;
constexpr std::size_t kRowStride = kPiece + 64;  // as cast_transpose's chunk rows: no set aliasing

enum Part : unsigned { kConvert = 1, kTranspose = 2, kAmax = 4 };

void run_parts(benchmark::State& state, unsigned parts) {
  const detail::TransposeKernels* t = detail::transpose_kernels_avx2();
  if (active_isa() == Isa::kGeneric || t == nullptr) {
    state.SkipWithError("needs the AVX2 kernels");
    return;
  }
  const std::span<const std::uint16_t> x = std::span(bf16_data()).first(kSlots * kPiece);
  ConvertOptions o;
  o.scale = kScale;
  const detail::NarrowParams params = detail::make_narrow_params(kBF16, kE4M3FN, o);
  const detail::NarrowFn fn = detail::narrow_kernel(active_isa(), detail::Source::kBF16, o.rounding);
  const detail::MaxAbsKernels& m = detail::max_abs_kernels(active_isa());
  std::vector<std::uint8_t> codes(kSlots * kRowStride, 0), tile(detail::kTransposeTile * detail::kTileColumnRows);
  std::uint32_t amax = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kPieces; ++i) {
      const std::size_t r = i % kSlots;
      const std::uint16_t* piece = x.data() + r * kPiece;
      if (parts & kConvert) fn(piece, codes.data() + r * kRowStride, kPiece, 0, params);
      if (parts & kTranspose)  // row r's 64-column slice of the 8 rows, 512 codes a piece
        t->tile_column(codes.data() + r * detail::kTransposeTile, kRowStride, kSlots, detail::kTransposeTile,
                       tile.data() + r * kSlots, nullptr);
      if (parts & kAmax) amax = std::max<std::uint32_t>(amax, m.bits16(piece, kPiece));
    }
    benchmark::DoNotOptimize(amax);
    benchmark::DoNotOptimize(tile.data());
    benchmark::DoNotOptimize(codes.data());
  }
  const auto n = static_cast<std::int64_t>(kPieces * kPiece);
  state.SetBytesProcessed(state.iterations() * n * 3);
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(std::string(isa_name(active_isa())));
}

}  // namespace

void register_cast_transpose_floor() {
  const std::vector<std::string> single{"quant/cast_bf16_scaled/threads:1"};
  add_case("floor/convert_l1", single, [](benchmark::State& s) { run_parts(s, kConvert); });
  add_case("floor/transpose_l1", single, [](benchmark::State& s) { run_parts(s, kTranspose); });
  add_case("floor/amax_l1", single, [](benchmark::State& s) { run_parts(s, kAmax); });
  add_case("floor/fused_work_l1", single, [](benchmark::State& s) { run_parts(s, kConvert | kTranspose | kAmax); });
}

}  // namespace fp8q::bench
