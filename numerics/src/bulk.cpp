// The bulk conversion driver: checks sizes, picks a path, splits the work across threads.
#include "fp8q/numerics/bulk.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "dispatch.hpp"
#include "isa/max_abs_kernels.hpp"
#include "isa/widen.hpp"
#include "narrow_f32_16.hpp"

namespace fp8q {
namespace {

using detail::NarrowFn;
using detail::Source;
using detail::narrow_kernel;
using detail::parallel_pinned;
using detail::source_of;
using detail::throw_invalid_code;
using detail::WideOut;
using detail::WidenFn;
using detail::WidenParams;

void store_le(std::byte* p, std::uint64_t v, int bytes) { std::memcpy(p, &v, static_cast<std::size_t>(bytes)); }

std::string nan_message(std::size_t index, const Format& to) {
  return "element " + std::to_string(index) + ": NaN has no encoding in " + std::string(to.name) +
         " (NaN policy: error)";
}

// Finds the first element of [begin, end) whose NaN the target cannot hold.
[[noreturn]] void throw_first_nan(std::span<const std::byte> in, const Format& from, const Format& to,
                                  const ConvertOptions& o, std::size_t begin, std::size_t end) {
  const int ib = from.storage_bytes();
  for (std::size_t i = begin; i < end; ++i)
    if (convert_one(detail::load_code(in.data() + i * ib, ib), from, to, o, i).nan_unrepresentable)
      throw NanError(i, nan_message(i, to));
  throw std::logic_error("fp8q: a kernel reported a NaN that the scalar path does not see");
}

// Narrow sources (<= 8 bits): one table of 256 results for this call's options, applied by a
// plain lookup loop per output width, or, into fp32 / bf16 / fp16 where the ISA has a decoding
// kernel whose formula gives the table's results (checked once per call, isa/widen.hpp), by it. Codes that are not codes of `from` (fp6/fp4 bytes with
// high bits set) and NaNs the target cannot hold are found by a check per chunk that only
// runs its slow search when such a byte is present.
template <class Out>
void apply_table(const std::uint8_t* src, std::byte* dst, std::size_t begin, std::size_t end,
                 const std::array<Out, 256>& table) {
  // memcpy: `dst` need not be aligned for Out; it compiles to one store
  for (std::size_t i = begin; i < end; ++i) std::memcpy(dst + i * sizeof(Out), &table[src[i]], sizeof(Out));
}

// The decoding kernel of `isa` for from -> to where it computes the table (isa/widen.hpp), or
// nullptr.
WidenFn widen_kernel(Isa isa, const Format& from, const Format& to, const void* table, WidenParams& p) {
  if (isa == Isa::kGeneric || !(to == kF32 || to == kBF16 || to == kF16)) return nullptr;
  const WideOut w = to == kF32 ? WideOut::kF32 : to == kBF16 ? WideOut::kBF16 : WideOut::kF16;
  if (!detail::make_widen_params(from, w, table, p)) return nullptr;
  return dispatch(
      isa, [] { return WidenFn{}; }, [&] { return detail::widen_kernel_avx2(w); }, kNoKernel,
      [&] { return detail::widen_kernel_neon(w); });
}

void convert_by_table(std::span<const std::byte> in, const Format& from, std::span<std::byte> out,
                      const Format& to, const ConvertOptions& o, int threads, Isa isa) {
  std::array<std::uint64_t, 256> codes{};
  std::array<bool, 256> bad{};  // not a code of `from`, or a NaN the target cannot hold (kError)
  bool any_bad = false;
  for (std::uint64_t c = 0; c < 256; ++c) {
    if (c >> from.bits() != 0) {
      bad[c] = any_bad = true;
      continue;
    }
    const Converted r = convert_one(c, from, to, o, 0);
    codes[c] = r.code;
    bad[c] = r.nan_unrepresentable && o.nan == NanPolicy::kError;
    any_bad = any_bad || bad[c];
  }
  auto narrowed = [&]<class Out>(Out) {
    std::array<Out, 256> t{};
    for (std::size_t c = 0; c < 256; ++c) t[c] = static_cast<Out>(codes[c]);
    return t;
  };
  const auto* src = reinterpret_cast<const std::uint8_t*>(in.data());
  auto check = [&](std::size_t begin, std::size_t end) {
    if (!any_bad) return;
    for (std::size_t i = begin; i < end; ++i) {
      if (!bad[src[i]]) continue;
      if (src[i] >> from.bits() != 0) throw_invalid_code(i, src[i], from);
      throw NanError(i, nan_message(i, to));
    }
  };
  auto run = [&]<class Out>(Out tag) {
    const std::array<Out, 256> table = narrowed(tag);
    WidenParams wp;
    const WidenFn widen = sizeof(Out) > 4 ? nullptr : widen_kernel(isa, from, to, table.data(), wp);  // after check()
    parallel_pinned(in.size(), threads, [&](std::size_t begin, std::size_t end) {
      check(begin, end);
      if (widen != nullptr) {
        widen(src + begin, out.data() + begin * sizeof(Out), end - begin, wp);
      } else {
        apply_table(src, out.data(), begin, end, table);
      }
    });
  };
  switch (to.storage_bytes()) {
    case 1: run(std::uint8_t{}); break;
    case 2: run(std::uint16_t{}); break;
    case 4: run(std::uint32_t{}); break;
    default: run(std::uint64_t{}); break;
  }
}

// What every bulk call checks first: whole elements, matching sizes, threads, the path.
struct Call {
  std::size_t n, ib, ob;
  Isa isa;
};

Call check_call(std::span<const std::byte> in, const Format& from, std::span<std::byte> out, const Format& to,
                const BulkOptions& bulk) {
  const auto ib = static_cast<std::size_t>(from.storage_bytes());
  const auto ob = static_cast<std::size_t>(to.storage_bytes());
  if (in.size() % ib != 0)
    throw std::invalid_argument("input of " + std::to_string(in.size()) + " bytes is not a whole number of " +
                                std::string(from.name) + " elements (" + std::to_string(ib) + " bytes each)");
  const std::size_t n = in.size() / ib;
  if (out.size() != n * ob)
    throw std::invalid_argument("output holds " + std::to_string(out.size()) + " bytes; " + std::to_string(n) +
                                " " + std::string(to.name) + " elements need " + std::to_string(n * ob));
  if (bulk.threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(bulk.threads));
  return {n, ib, ob, resolve_isa(bulk.isa, "BulkOptions::isa")};
}

}  // namespace

void convert(std::span<const std::byte> in, const Format& from, std::span<std::byte> out, const Format& to,
             const ConvertOptions& o, const BulkOptions& bulk) {
  const auto [n, ib, ob, isa] = check_call(in, from, out, to, bulk);
  if (detail::narrow_supported(from, to)) {
    const detail::NarrowParams params = detail::make_narrow_params(from, to, o);
    const NarrowFn fn = narrow_kernel(isa, source_of(from), o.rounding);
    auto* dst = reinterpret_cast<std::uint8_t*>(out.data());
    parallel_pinned(n, bulk.threads, [&](std::size_t begin, std::size_t end) {
      if (fn(in.data() + begin * ib, dst + begin, end - begin, begin, params) && o.nan == NanPolicy::kError)
        throw_first_nan(in, from, to, o, begin, end);
    });
    return;
  }
  if (from.bits() <= 8 && o.rounding != Rounding::kStochastic) {
    convert_by_table(in, from, out, to, o, bulk.threads, isa);
    return;
  }
  const bool to_bf16 = detail::f32_to_bf16_path(from, to, o);
  if (to_bf16 || detail::f32_to_f16_path(from, to, o)) {
    const detail::F32ToHalfFn fn = dispatch(
        isa, [&] { return to_bf16 ? &detail::f32_to_bf16_rne : &detail::f32_to_f16_rne; },
        [&] { return to_bf16 ? detail::f32_to_bf16_rne_avx2() : detail::f32_to_f16_rne_avx2(); }, kNoKernel, kNoKernel);
    parallel_pinned(n, bulk.threads, [&](std::size_t begin, std::size_t end) {
      fn(in.data() + 4 * begin, out.data() + 2 * begin, end - begin, o.overflow == Overflow::kSaturate);
    });
    return;
  }
  parallel_pinned(n, bulk.threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint64_t code = detail::load_code(in.data() + i * ib, ib);
      if (from.bits() < 64 && code >> from.bits() != 0) throw_invalid_code(i, code, from);  // fp6 / fp4
      const Converted r = convert_one(code, from, to, o, i);
      if (r.nan_unrepresentable && o.nan == NanPolicy::kError) throw NanError(i, nan_message(i, to));
      store_le(out.data() + i * ob, r.code, static_cast<int>(ob));
    }
  });
}

float convert_with_amax(std::span<const std::byte> in, const Format& from, std::span<std::byte> out,
                        const Format& to, const ConvertOptions& o, const BulkOptions& bulk) {
  if (!(from == kF32 || from == kBF16 || from == kF16))
    throw std::invalid_argument("convert_with_amax takes f32, bf16 or f16, not " + std::string(from.name));
  [[maybe_unused]] const auto [n, ib, ob, isa] = check_call(in, from, out, to, bulk);
  const detail::MaxAbsKernels& m = detail::max_abs_kernels(isa);
  // the largest |x| pattern of elements [begin, end) (bits32 for fp32, bits16 otherwise)
  auto amax_of = [&](std::size_t begin, std::size_t end) -> std::uint32_t {
    const std::byte* p = in.data() + begin * ib;
    return ib == 4 ? m.bits32(p, end - begin) : m.bits16(p, end - begin);
  };
  std::atomic<std::uint32_t> amax{0};
  if (detail::narrow_supported(from, to)) {
    const detail::NarrowParams params = detail::make_narrow_params(from, to, o);
    const NarrowFn fn = narrow_kernel(isa, source_of(from), o.rounding);
    auto* dst = reinterpret_cast<std::uint8_t*>(out.data());
    parallel_pinned(n, bulk.threads, [&](std::size_t begin, std::size_t end) {
      std::uint32_t local = 0;
      bool nan = false;
      for (std::size_t p = begin; p < end; p += kAmaxPiece) {
        const std::size_t q = std::min(end, p + kAmaxPiece);
        nan = fn(in.data() + p * ib, dst + p, q - p, p, params) || nan;
        local = std::max(local, amax_of(p, q));  // the piece's input is still in L1
      }
      if (nan && o.nan == NanPolicy::kError) throw_first_nan(in, from, to, o, begin, end);
      detail::merge_max(amax, local);
    });
  } else {
    convert(in, from, out, to, o, bulk);  // no SIMD kernel: the amax in a second pass
    parallel_pinned(n, bulk.threads,
                    [&](std::size_t begin, std::size_t end) { detail::merge_max(amax, amax_of(begin, end)); });
  }
  return detail::amax_value(amax.load(), from);
}

void convert(std::span<const float> in, std::span<std::uint8_t> out, const Format& to, const ConvertOptions& o,
             const BulkOptions& bulk) {
  convert(std::as_bytes(in), kF32, std::as_writable_bytes(out), to, o, bulk);
}
void convert(std::span<const std::uint8_t> in, const Format& from, std::span<float> out, const ConvertOptions& o,
             const BulkOptions& bulk) {
  convert(std::as_bytes(in), from, std::as_writable_bytes(out), kF32, o, bulk);
}

}  // namespace fp8q
