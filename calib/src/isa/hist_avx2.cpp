// AVX2 histogram kernels. The only file of calib compiled with -mavx2; chosen at run time.
//
// Scan (fp32): 8 lanes of and + unsigned max + unsigned min + compare-to-zero per instruction
// group, so it runs at the speed of the loads. Count (fp32): the bin indices of 8 elements come from one and,
// one shift, one subtraction and one max; the increments themselves are scalar (AVX2 has no
// scatter), spread over kTables tables so that equal neighbouring bins do not serialize.
// Tally: see hist_kernels.hpp; why each variant reads its slots the way it does is noted below.
#include <immintrin.h>

#include <cstring>

#include "isa/hist_kernels.hpp"

namespace fp8q::calib::detail {
namespace {

// 8 |x| patterns as fp32 lanes.
inline __m256i load_abs_f32(const void* in, std::size_t i) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const float*>(in) + i));
  return _mm256_and_si256(v, _mm256_set1_epi32(0x7FFFFFFF));
}
inline std::uint32_t abs_one_f32(const void* in, std::size_t i) {
  return static_cast<const std::uint32_t*>(in)[i] & 0x7FFFFFFFu;
}

// Scan statistics of 8 |x| lanes, kept in vectors across a call.
struct Stats {
  __m256i max = _mm256_setzero_si256(), zeros = _mm256_setzero_si256(), low = _mm256_set1_epi32(-1);
  void add(__m256i a, __m256i is_zero) {
    max = _mm256_max_epu32(max, a);
    zeros = _mm256_sub_epi32(zeros, is_zero);                         // a lane of all ones is -1
    low = _mm256_min_epu32(low, _mm256_sub_epi32(a, _mm256_set1_epi32(1)));  // 0 - 1 wraps: zeros never win
  }
  void merge(const Stats& o) {
    max = _mm256_max_epu32(max, o.max);
    zeros = _mm256_add_epi32(zeros, o.zeros);
    low = _mm256_min_epu32(low, o.low);
  }
  // Horizontal reduction, then the scalar elements i .. n - 1.
  template <std::uint32_t (*One)(const void*, std::size_t)>
  ScanResult finish(const void* in, std::size_t i, std::size_t n) const {
    alignas(32) std::uint32_t m[8], z[8], l[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(m), max);
    _mm256_store_si256(reinterpret_cast<__m256i*>(z), zeros);
    _mm256_store_si256(reinterpret_cast<__m256i*>(l), low);
    ScanResult r;
    std::uint32_t lo = 0xFFFFFFFFu;
    for (int k = 0; k < 8; ++k) {
      r.max_bits = m[k] > r.max_bits ? m[k] : r.max_bits;
      r.zeros += z[k];
      lo = l[k] < lo ? l[k] : lo;
    }
    for (; i < n; ++i) {
      const std::uint32_t a = One(in, i);
      r.max_bits = a > r.max_bits ? a : r.max_bits;
      r.zeros += a == 0;
      lo = a - 1 < lo ? a - 1 : lo;
    }
    r.min_nonzero_bits = lo + 1 == 0 ? 0xFFFFFFFFu : lo + 1;
    return r;
  }
};

template <__m256i (*Load)(const void*, std::size_t), std::uint32_t (*One)(const void*, std::size_t)>
ScanResult scan(const void* in, std::size_t n) {
  Stats s0, s1;  // two chains, so that consecutive vectors do not wait for each other
  const __m256i zero = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = Load(in, i), b = Load(in, i + 8);
    s0.add(a, _mm256_cmpeq_epi32(a, zero));
    s1.add(b, _mm256_cmpeq_epi32(b, zero));
  }
  s0.merge(s1);
  return s0.template finish<One>(in, i, n);
}

template <__m256i (*Load)(const void*, std::size_t), std::uint32_t (*One)(const void*, std::size_t)>
void count(const void* in, std::size_t n, int shift, int base, std::uint32_t* tables, std::size_t bins) {
  static_assert(kTables == 4, "the lane offsets below spread 8 lanes over 4 tables");
  const __m128i sh = _mm_cvtsi32_si128(shift);
  const __m256i vbase = _mm256_set1_epi32(base), zero = _mm256_setzero_si256();
  const auto b = static_cast<int>(bins);
  // lane l increments table l % 4 (element i + l has (i + l) % 4 == l % 4 since i % 8 == 0)
  const __m256i offset = _mm256_setr_epi32(0, b, 2 * b, 3 * b, 0, b, 2 * b, 3 * b);
  alignas(32) std::int32_t idx[16];
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i k0 = _mm256_max_epi32(_mm256_sub_epi32(_mm256_srl_epi32(Load(in, i), sh), vbase), zero);
    const __m256i k1 = _mm256_max_epi32(_mm256_sub_epi32(_mm256_srl_epi32(Load(in, i + 8), sh), vbase), zero);
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx), _mm256_add_epi32(k0, offset));
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx + 8), _mm256_add_epi32(k1, offset));
    for (int l = 0; l < 16; ++l) tables[idx[l]] += 1;
  }
  for (; i < n; ++i) {
    const int p = static_cast<int>(One(in, i) >> shift) - base;
    tables[(i % kTables) * bins + static_cast<std::size_t>(p > 0 ? p : 0)] += 1;
  }
}

// ---- pattern tallies ---------------------------------------------------------------------------

// Four 16-bit slot numbers from one 64-bit word, each incremented.
inline void bump4(std::uint64_t w, std::uint32_t* table) {
  table[w & 0xFFFF] += 1;
  table[(w >> 16) & 0xFFFF] += 1;
  table[(w >> 32) & 0xFFFF] += 1;
  table[w >> 48] += 1;
}
// fp32, plain, a run of kPlainRun elements at a time: first the statistics in vectors and the
// slots (a >> 16 <= 0x7FFF, which the unsigned saturating pack keeps) of each 16 elements
// packed to 16-bit lanes in a buffer (in the pack's own lane order, which a tally does not care
// about); then the run's slots tallied, four per 64-bit load, with one prefetch of the input
// kPlainPrefetch bytes ahead per 16 slots. The tally phase issues few loads of its own, which
// is where the prefetches go (against the earlier form: docs/performance.md).
constexpr std::size_t kPlainRun = 256;
constexpr std::size_t kPlainPrefetch = 4096;
ScanResult tally_f32(const float* in, std::size_t n, std::uint32_t* table) {
  Stats st;
  const __m256i zero = _mm256_setzero_si256();
  alignas(32) std::uint16_t buf[kPlainRun];
  const std::size_t m = n / kPlainRun * kPlainRun;
  for (std::size_t run = 0; run < m; run += kPlainRun) {
    for (std::size_t i = 0; i < kPlainRun; i += 16) {
      const __m256i a = load_abs_f32(in, run + i), b = load_abs_f32(in, run + i + 8);
      st.add(a, _mm256_cmpeq_epi32(a, zero));
      st.add(b, _mm256_cmpeq_epi32(b, zero));
      _mm256_store_si256(reinterpret_cast<__m256i*>(buf + i),
                         _mm256_packus_epi32(_mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16)));
    }
    const char* pf = reinterpret_cast<const char*>(in + run) + kPlainPrefetch;
    for (std::size_t i = 0; i < kPlainRun; i += 16, pf += 64) {
      _mm_prefetch(pf, _MM_HINT_T0);
      for (std::size_t k = 0; k < 16; k += 4) {
        std::uint64_t w;
        std::memcpy(&w, buf + i + k, 8);
        bump4(w, table);
      }
    }
  }
  const std::size_t m8 = n / 8 * 8;
  for (std::size_t i = m; i < m8; i += 8) {
    const __m256i a = load_abs_f32(in, i);
    st.add(a, _mm256_cmpeq_epi32(a, zero));
  }
  for (std::size_t j = m; j < n; ++j) table[abs_one_f32(in, j) >> 16] += 1;
  return st.finish<abs_one_f32>(in, m8, n);
}

// bf16, plain: four patterns per 64-bit load, sign masked; nothing else to compute.
void tally_bf16(const std::uint16_t* in, std::size_t n, std::uint32_t* table) {
  constexpr std::uint64_t kAbs = 0x7FFF'7FFF'7FFF'7FFFull;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w0, w1;
    std::memcpy(&w0, in + i, 8);
    std::memcpy(&w1, in + i + 4, 8);
    bump4(w0 & kAbs, table);
    bump4(w1 & kAbs, table);
  }
  for (; i < n; ++i) table[in[i] & 0x7FFFu] += 1;
}

// ---- zeros counted, not tallied (the `_zeros` variants) ------------------------------------------
// A sample with q == 0 (|x| < 2^-133 for fp32: a zero or a tiny subnormal; for bf16 exactly a
// zero) is counted with a vector compare and added to slot 0 once per call; only the others
// are tallied. For that the nonzero slots of each 16 elements are packed to the front of a
// buffer (a pshufb per 8 lanes, its control from a table indexed by the 8-bit mask of kept
// lanes) and tallied from there: a zero costs no store, and half zeros (ReLU) halve the stores.
//
// The buffer holds one run of kPackRun elements: pack the run, then tally it, 4 slots per 64-bit
// load (the run length and the forms measured: docs/performance.md).

// For an 8-bit mask of the 16-bit lanes to keep, the pshufb control that moves them, in order,
// to the front (the other bytes zero).
struct PackTable {
  alignas(16) unsigned char control[256][16];
};
constexpr PackTable make_pack_table() {
  PackTable t{};
  for (int m = 0; m < 256; ++m) {
    int k = 0;
    for (int lane = 0; lane < 8; ++lane)
      if (m >> lane & 1) {
        t.control[m][2 * k] = static_cast<unsigned char>(2 * lane);
        t.control[m][2 * k + 1] = static_cast<unsigned char>(2 * lane + 1);
        ++k;
      }
    for (; k < 8; ++k) t.control[m][2 * k] = t.control[m][2 * k + 1] = 0x80;  // pshufb: zero
  }
  return t;
}
constexpr PackTable kPack = make_pack_table();

// Writes the nonzero lanes of q, in order, to out (which must have room for 16) and returns
// how many.
inline std::size_t pack_nonzero(__m256i q, std::uint16_t* out) {
  const __m256i is_zero = _mm256_cmpeq_epi16(q, _mm256_setzero_si256());
  // packs gives bytes [lanes 0-7, lanes 0-7 | lanes 8-15, lanes 8-15]: mask bits 0-7 and 16-23
  const auto keep = ~static_cast<unsigned>(_mm256_movemask_epi8(_mm256_packs_epi16(is_zero, is_zero)));
  const unsigned lo = keep & 0xFF, hi = keep >> 16 & 0xFF;
  const auto ctl = [](unsigned m) { return _mm_load_si128(reinterpret_cast<const __m128i*>(kPack.control[m])); };
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_shuffle_epi8(_mm256_castsi256_si128(q), ctl(lo)));
  const auto n_lo = static_cast<std::size_t>(__builtin_popcount(lo));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + n_lo), _mm_shuffle_epi8(_mm256_extracti128_si256(q, 1), ctl(hi)));
  return n_lo + static_cast<std::size_t>(__builtin_popcount(hi));
}

constexpr std::size_t kPackRun = 512;  // elements per run of the buffer below (1 KiB, in L1)
static_assert(kPackRun % 16 == 0, "whole steps of 16 elements");

// For elements i in [0, n) (n a multiple of 16): slots(i, out) packs the nonzero slots of elements
// i .. i + 15 to out and returns how many; they are tallied. Returns how many were zero.
template <class Slots>
std::size_t tally_packed(std::size_t n, std::uint32_t* table, Slots slots) {
  alignas(32) std::uint16_t buf[kPackRun + 16];  // + 16: room for the last step's full stores
  std::size_t zeros = 0;
  for (std::size_t run = 0; run < n; run += kPackRun) {
    const std::size_t end = run + (n - run < kPackRun ? n - run : kPackRun);
    std::size_t k = 0;
    for (std::size_t i = run; i < end; i += 16) k += slots(i, buf + k);
    std::size_t j = 0;
    for (; j + 4 <= k; j += 4) {
      std::uint64_t w;
      std::memcpy(&w, buf + j, 8);
      bump4(w, table);
    }
    for (; j < k; ++j) table[buf[j]] += 1;
    zeros += (end - run) - k;
  }
  return zeros;
}

// fp32: the statistics in vectors; the slots (a >> 16 <= 0x7FFF, which the unsigned saturating
// pack keeps) of 16 elements packed to 16-bit lanes.
ScanResult tally_f32_zeros(const float* in, std::size_t n, std::uint32_t* table) {
  Stats st;
  const __m256i zero = _mm256_setzero_si256();
  const std::size_t m = n / 16 * 16;
  const std::size_t zeros = tally_packed(m, table, [&](std::size_t i, std::uint16_t* out) {
    const __m256i a = load_abs_f32(in, i), b = load_abs_f32(in, i + 8);
    st.add(a, _mm256_cmpeq_epi32(a, zero));
    st.add(b, _mm256_cmpeq_epi32(b, zero));
    return pack_nonzero(_mm256_packus_epi32(_mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16)), out);
  });
  table[0] += static_cast<std::uint32_t>(zeros);
  for (std::size_t j = m; j < n; ++j) table[abs_one_f32(in, j) >> 16] += 1;
  return st.finish<abs_one_f32>(in, m, n);
}

// bf16: the slot is the pattern without its sign.
void tally_bf16_zeros(const std::uint16_t* in, std::size_t n, std::uint32_t* table) {
  const __m256i abs = _mm256_set1_epi16(0x7FFF);
  const std::size_t m = n / 16 * 16;
  const std::size_t zeros = tally_packed(m, table, [&](std::size_t i, std::uint16_t* out) {
    return pack_nonzero(_mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)), abs), out);
  });
  table[0] += static_cast<std::uint32_t>(zeros);
  for (std::size_t j = m; j < n; ++j) table[in[j] & 0x7FFFu] += 1;
}

// Tail candidates: 8 compares per instruction; the rare lanes that pass are copied out in order.
std::size_t select_f32(const float* in, std::size_t n, std::uint32_t above, std::uint32_t* out) {
  // |x| patterns are below 2^31 and above <= 0x7F7FFFFF, so signed compares order them
  const __m256i lo = _mm256_set1_epi32(static_cast<int>(above)), inf = _mm256_set1_epi32(0x7F800000);
  std::size_t k = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i a = load_abs_f32(in, i);
    const __m256i pass = _mm256_and_si256(_mm256_cmpgt_epi32(a, lo), _mm256_cmpgt_epi32(inf, a));
    auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(pass)));
    while (mask) {
      out[k++] = abs_one_f32(in, i + static_cast<std::size_t>(__builtin_ctz(mask)));
      mask &= mask - 1;
    }
  }
  for (; i < n; ++i) {
    const std::uint32_t a = abs_one_f32(in, i);
    if (a > above && a < 0x7F800000u) out[k++] = a;
  }
  return k;
}

}  // namespace

const HistKernels* hist_kernels_avx2() {
  static const HistKernels k{[](const float* in, std::size_t n) { return scan<load_abs_f32, abs_one_f32>(in, n); },
                             [](const float* in, std::size_t n, int shift, int base, std::uint32_t* t, std::size_t bins) {
                               count<load_abs_f32, abs_one_f32>(in, n, shift, base, t, bins);
                             },
                             tally_f32, tally_f32_zeros, tally_bf16, tally_bf16_zeros, select_f32};
  return &k;
}

}  // namespace fp8q::calib::detail
