// wgmma_fp8: FP8 dot products on Hopper's warpgroup MMA, for `fp8q fit` (docs/validation.md,
// section 6, "On a device: the prepared Hopper check"). Hopper's FP8 GEMMs (cuBLAS, CUTLASS) run
// on wgmma; its published model is fused:32:13:rtz.
//
//   wgmma_fp8 DIR [--dry] [--out D.bin]      the files of mma_fp8.cu (raw_io.cuh): D = A B + C
//   wgmma_fp8 --probe [--dry]                the layout probe: exits 1 unless D is exact
//
// One warpgroup (128 threads) computes one 64 x 8 tile of D with
// wgmma.mma_async.sync.aligned.m64n8k32.f32.<ta>.<tb>, one instruction per K-chunk of 32 with
// scale-d true (D = A B + D): the accumulator registers, loaded with C (+0 without a C), are each
// instruction's C, as in a kernel that accumulates in registers. K must be a multiple of 32.
//
// Operands (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate", shared memory
// matrix layouts): FP8 A and B are K-major, read from shared memory through descriptors, with
// no swizzle: the tile is made of core matrices of 8 rows x 16 bytes, each 128 contiguous bytes
// (row r at byte 16 r). Core matrix (i, j) (rows 8i.., bytes 16j..) is at 128 (2 i + j): the
// leading byte offset (the next core matrix along K) is 128, the stride byte offset (the next
// 8 rows) 256. Descriptor: bits 0-13 address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, swizzle 0.
// D (64 x 8, f32): thread 32 w + 4 g + t holds d0..d3 at rows 16 w + g (+ 8 for d2, d3),
// columns 2 t and 2 t + 1.
// The probe multiplies small integers (every model gives the exact sum) with distinct values in
// every row, column and K position, so a wrong layout, descriptor or fragment map shows as a
// wrong D; run.sh runs it before any measured set.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "raw_io.cuh"

namespace {

using namespace fp8q_device;

constexpr int kTileM = 64, kTileN = 8, kStepK = 32;

// Byte offset of element (row, k) of a K-major tile with 32 bytes of K per row (two core
// matrices along K).
__host__ __device__ constexpr int core_offset(int row, int k) {
  return 128 * (2 * (row / 8) + k / 16) + 16 * (row % 8) + k % 16;
}

__device__ __forceinline__ uint64_t descriptor(const void* smem) {
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t((addr & 0x3FFFF) >> 4) | uint64_t(128 >> 4) << 16 | uint64_t(256 >> 4) << 32;
}

template <int FA, int FB>
__device__ __forceinline__ void wgmma_step(float (&d)[4], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FP8Q_WGMMA(TA, TB)                                                                       \
  asm volatile("{\n"                                                                             \
               ".reg .pred scale_d;\n"                                                           \
               "setp.ne.b32 scale_d, %6, 0;\n"                                                   \
               "wgmma.fence.sync.aligned;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n8k32.f32." TA "." TB                            \
               " {%0, %1, %2, %3}, %4, %5, scale_d, 1, 1;\n"                                     \
               "wgmma.commit_group.sync.aligned;\n"                                              \
               "wgmma.wait_group.sync.aligned 0;\n"                                              \
               "}\n"                                                                             \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                  \
               : "l"(desc_a), "l"(desc_b), "r"(1)                                                \
               : "memory")
  if constexpr (FA == kE4M3 && FB == kE4M3) FP8Q_WGMMA("e4m3", "e4m3");
  else if constexpr (FA == kE4M3 && FB == kE5M2) FP8Q_WGMMA("e4m3", "e5m2");
  else if constexpr (FA == kE5M2 && FB == kE4M3) FP8Q_WGMMA("e5m2", "e4m3");
  else FP8Q_WGMMA("e5m2", "e5m2");
#undef FP8Q_WGMMA
#else
  // Compiled only for the host pass or a target without wgmma (sm_90a only); main() refuses others.
  (void)d, (void)desc_a, (void)desc_b;
  __trap();
#endif
}

// a: Mp x K codes, row-major; bt: Np x K codes (B's columns); c, d: Mp x Np fp32 (Mp, Np = M, N
// padded to 64, 8 with +0 codes). Block = one warpgroup = one 64 x 8 tile.
template <int FA, int FB>
__global__ void wgmma_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ bt,
                             const float* __restrict__ c, float* __restrict__ d, int np, int k) {
  __shared__ __align__(128) uint8_t sa[kTileM * kStepK];
  __shared__ __align__(128) uint8_t sb[kTileN * kStepK];
  const int tid = threadIdx.x, w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
  const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
  const int rows[4] = {row0 + 16 * w + g, row0 + 16 * w + g, row0 + 16 * w + g + 8, row0 + 16 * w + g + 8};
  const int cols[4] = {col0 + 2 * t, col0 + 2 * t + 1, col0 + 2 * t, col0 + 2 * t + 1};
  float acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = c[rows[i] * np + cols[i]];
  for (int k0 = 0; k0 < k; k0 += kStepK) {
    for (int e = tid; e < kTileM * kStepK; e += 128) {
      const int r = e / kStepK, kk = e % kStepK;
      sa[core_offset(r, kk)] = a[size_t(row0 + r) * k + k0 + kk];
    }
    for (int e = tid; e < kTileN * kStepK; e += 128) {
      const int r = e / kStepK, kk = e % kStepK;
      sb[core_offset(r, kk)] = bt[size_t(col0 + r) * k + k0 + kk];
    }
    // the generic-proxy stores above must be visible to wgmma's async-proxy reads
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    wgmma_step<FA, FB>(acc, descriptor(sa), descriptor(sb));
    __syncthreads();  // every thread's wgmma has read the tiles before they are overwritten
  }
  for (int i = 0; i < 4; ++i) d[rows[i] * np + cols[i]] = acc[i];
}

template <int FA, int FB>
void launch(dim3 grid, const uint8_t* a, const uint8_t* bt, const float* c, float* d, int np, int k) {
  wgmma_kernel<FA, FB><<<grid, 128>>>(a, bt, c, d, np, k);
}

std::vector<float> device_dot(const Inputs& in) {
  int dev = 0;
  cudaDeviceProp prop{};
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  if (prop.major != 9)
    die(std::string(prop.name) + " is sm_" + std::to_string(prop.major * 10 + prop.minor) + ": wgmma needs sm_90a (Hopper)");
  std::fprintf(stderr, "wgmma_fp8: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  return run_padded(in, kTileM, kTileN, [&](dim3 grid, const uint8_t* a, const uint8_t* bt, const float* c, float* d,
                                            int np, int k) {
    if (in.fa == kE4M3 && in.fb == kE4M3) launch<kE4M3, kE4M3>(grid, a, bt, c, d, np, k);
    else if (in.fa == kE4M3) launch<kE4M3, kE5M2>(grid, a, bt, c, d, np, k);
    else if (in.fb == kE4M3) launch<kE5M2, kE4M3>(grid, a, bt, c, d, np, k);
    else launch<kE5M2, kE5M2>(grid, a, bt, c, d, np, k);
  });
}

// The e4m3fn code of a small integer v (|v| <= 7): 1.xxx 2^e exactly.
uint8_t e4m3_int(int v) {
  if (v == 0) return 0;
  const int m = v < 0 ? -v : v, e = m >= 4 ? 2 : m >= 2 ? 1 : 0;
  const int frac = (m << (3 - e)) & 7;  // 3 mantissa bits below the leading one
  return uint8_t((v < 0 ? 0x80 : 0) | (e + 7) << 3 | frac);
}

// The probe: 128 x 16 x 64 (two tiles each way, two K steps), a[i][k] and b[k][j] small integers
// that differ with i, j and k, C = i - j; every D is an exact integer under every model (the
// products are at most 49 and the sums below 2^13).
int probe(bool dry) {
  Inputs in;
  in.m = 128, in.n = 16, in.k = 64, in.has_c = true;
  in.a.resize(size_t(in.m) * in.k), in.b.resize(size_t(in.k) * in.n), in.c.resize(size_t(in.m) * in.n);
  for (int i = 0; i < in.m; ++i)
    for (int kk = 0; kk < in.k; ++kk) in.a[size_t(i) * in.k + kk] = e4m3_int((i * 3 + kk * 5) % 15 - 7);
  for (int kk = 0; kk < in.k; ++kk)
    for (int j = 0; j < in.n; ++j) in.b[size_t(kk) * in.n + j] = e4m3_int((kk * 7 + j * 2 + 1) % 15 - 7);
  for (int i = 0; i < in.m; ++i)
    for (int j = 0; j < in.n; ++j) in.c[size_t(i) * in.n + j] = float(i - j);
  const std::vector<float> d = dry ? host_dot(in) : device_dot(in);
  int wrong = 0;
  for (int i = 0; i < in.m; ++i)
    for (int j = 0; j < in.n; ++j) {
      double exact = in.c[size_t(i) * in.n + j];
      for (int kk = 0; kk < in.k; ++kk)
        exact += double(decode(in.a[size_t(i) * in.k + kk], kE4M3)) * decode(in.b[size_t(kk) * in.n + j], kE4M3);
      const float got = d[size_t(i) * in.n + j];
      if (double(got) != exact && wrong++ < 5)
        std::fprintf(stderr, "wgmma_fp8: probe: D[%d][%d] = %.9g, exact %.9g\n", i, j, double(got), exact);
    }
  std::fprintf(stderr, "wgmma_fp8: layout probe (%s): %s (%d of %d wrong)\n", dry ? "host, --dry" : "device",
               wrong ? "FAILED" : "OK", wrong, in.m * in.n);
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_tool = "wgmma_fp8";
  std::string dir, out;
  bool dry = false, run_probe = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out") {
      if (i + 1 >= argc) die("--out needs a value");
      out = argv[++i];
    } else if (arg == "--dry") dry = true;
    else if (arg == "--probe") run_probe = true;
    else if (arg == "-h" || arg == "--help") {
      std::printf("usage: wgmma_fp8 DIR [--dry] [--out D.bin] | wgmma_fp8 --probe [--dry]\n");
      return 0;
    } else if (!arg.empty() && arg[0] == '-') die("unknown option " + arg);
    else if (dir.empty()) dir = arg;
    else die("one DIR only");
  }
  if (run_probe) {
    if (!dir.empty() || !out.empty()) die("--probe makes its own problem: no DIR or --out");
    return probe(dry);
  }
  if (dir.empty()) die("usage: wgmma_fp8 DIR [--dry] [--out D.bin] | wgmma_fp8 --probe [--dry]");
  if (out.empty()) out = dir + "/d.bin";
  const Inputs in = read_inputs(dir);
  if (in.k % kStepK != 0)  // padding K with +0 products would change signed-zero results
    die("K = " + std::to_string(in.k) + ": K must be a multiple of 32 (one wgmma per 32)");
  write_d(out, dry ? host_dot(in) : device_dot(in));
  std::fprintf(stderr, "wgmma_fp8: %s: %d x %d of K = %d (%s x %s%s), %s -> %s\n", dir.c_str(), in.m, in.n, in.k,
               in.fa == kE4M3 ? "e4m3" : "e5m2", in.fb == kE4M3 ? "e4m3" : "e5m2", in.has_c ? ", C" : "",
               dry ? "host fp32_sequential (--dry)" : "wgmma m64n8k32 chain", out.c_str());
  return 0;
}
