// mma_fp8: FP8 tensor-core dot products on a device, for `fp8q fit` (docs/validation.md, section 6,
// "On a device: the prepared Hopper check").
//
//   mma_fp8 DIR [--mode chain|single] [--promote P] [--dry] [--out D.bin]
//
// DIR is what `st_raw.py to-raw` writes from an `fp8q vectors` file: meta.txt ("m M", "n N",
// "k K", "format_a F", "format_b F", "c 0|1"; F is e4m3fn or e5m2), a.bin (M x K codes, row-major),
// b.bin (K x N codes, row-major) and c.bin (M x N little-endian fp32, when "c 1"). Writes
// DIR/d.bin (or --out): M x N fp32, row-major.
//
// One warp computes one 16 x 8 tile of D with mma.sync.aligned.m16n8k32.row.col.f32.<ta>.<tb>.f32,
// one instruction per K-chunk of 32, the accumulator registers of one instruction being the C of
// the next (a kernel that accumulates in registers). The first C is the file's c, or with no c
// +0: the 0.0f a kernel initialises its accumulators with, and what fp8q's models take when a
// sample has no C (a C = -0 is measured with a c of -0, `st_raw.py set-c`). --mode single is the
// one-instruction case: K must be 32 and D = A B + C.
// --promote P (a multiple of 32) restarts the tensor-core accumulator from +0 every P products
// and adds each partial to an fp32 accumulator that starts at C on the CUDA cores (FADD, round to
// nearest even): the promotion of DeepSeek-V3 and of fp8q's `:promoteP` models.
// --dry computes D on the host instead (no GPU): acc = C, acc = fp32(acc + a_k b_k) in k order,
// which is fp8q's fp32_sequential; the FP8 products are exact in fp32. It checks the file plumbing.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k32" with 8-bit types; the same in
// CUTLASS's SM89_16x8x32 FP8 MMA_Traits): lane = 4 g + t (g = groupID, t = threadID_in_group).
//   A (16 x 32, row): a0..a3, 4 codes each, byte j of a_r = element 4r + j;
//       element i: row g + 8 * ((i / 4) % 2), column 4 t + (i % 4) + 16 * (i / 8).
//   B (32 x 8, col):  b0, b1, 4 codes each, byte j of b_r = element 4r + j;
//       element i: row 4 t + (i % 4) + 16 * (i / 4), column g.
//   C, D (16 x 8, f32): c0..c3; element i: row g + 8 * (i / 2), column 2 t + (i % 2).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "raw_io.cuh"

namespace {

using namespace fp8q_device;

// ---------------------------------------------------------------------------------------------
// Device side.

// One 16 x 8 x 32 step, D = A B + C in place on d[0..3]. Template on the operand formats: the
// PTX type names are part of the instruction.
template <int FA, int FB>
__device__ __forceinline__ void mma_step(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define FP8Q_MMA(TA, TB)                                                                          \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TA "." TB ".f32 "                         \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
  if constexpr (FA == kE4M3 && FB == kE4M3) FP8Q_MMA("e4m3", "e4m3");
  else if constexpr (FA == kE4M3 && FB == kE5M2) FP8Q_MMA("e4m3", "e5m2");
  else if constexpr (FA == kE5M2 && FB == kE4M3) FP8Q_MMA("e5m2", "e4m3");
  else FP8Q_MMA("e5m2", "e5m2");
#undef FP8Q_MMA
#else
  // Compiled only for the host pass or an older target; main() refuses devices below sm_89.
  (void)d, (void)a, (void)b;
  __trap();
#endif
}

// Four consecutive codes as one register, the lowest address in the lowest byte.
__device__ __forceinline__ uint32_t pack4(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// a: Mp x K codes, row-major; bt: Np x K codes (B's columns), row-major; c, d: Mp x Np fp32.
// Mp, Np are M, N padded to 16, 8 (padding rows and columns hold +0 codes and are not read back).
// Block = one warp = one tile (blockIdx.y: 16 rows, blockIdx.x: 8 columns).
template <int FA, int FB>
__global__ void mma_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ bt,
                           const float* __restrict__ c, float* __restrict__ d, int np, int k, int promote) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  const int rows[4] = {row0 + g, row0 + g, row0 + g + 8, row0 + g + 8};
  const int cols[4] = {col0 + 2 * t, col0 + 2 * t + 1, col0 + 2 * t, col0 + 2 * t + 1};
  float acc[4];  // the fp32 accumulator: C
  for (int i = 0; i < 4; ++i) acc[i] = c[rows[i] * np + cols[i]];
  float part[4];  // with --promote, the tensor-core partial; else the accumulator itself
  for (int i = 0; i < 4; ++i) part[i] = promote ? 0.0f : acc[i];
  const uint8_t* arow_lo = a + size_t(row0 + g) * k;      // A row g
  const uint8_t* arow_hi = a + size_t(row0 + g + 8) * k;  // A row g + 8
  const uint8_t* bcol = bt + size_t(col0 + g) * k;        // B column g
  for (int k0 = 0; k0 < k; k0 += 32) {
    const uint32_t ar[4] = {pack4(arow_lo + k0 + 4 * t), pack4(arow_hi + k0 + 4 * t),
                            pack4(arow_lo + k0 + 16 + 4 * t), pack4(arow_hi + k0 + 16 + 4 * t)};
    const uint32_t br[2] = {pack4(bcol + k0 + 4 * t), pack4(bcol + k0 + 16 + 4 * t)};
    mma_step<FA, FB>(part, ar, br);
    const bool flush = promote != 0 && ((k0 + 32) % promote == 0 || k0 + 32 == k);  // P products, or the last
    if (flush)
      for (int i = 0; i < 4; ++i) acc[i] = __fadd_rn(acc[i], part[i]), part[i] = 0.0f;
  }
  for (int i = 0; i < 4; ++i) d[rows[i] * np + cols[i]] = promote ? acc[i] : part[i];
}

template <int FA, int FB>
void launch(dim3 grid, const uint8_t* a, const uint8_t* bt, const float* c, float* d, int np, int k, int promote) {
  mma_kernel<FA, FB><<<grid, 32>>>(a, bt, c, d, np, k, promote);
}

std::vector<float> device_dot(const Inputs& in, int promote) {
  int dev = 0;
  cudaDeviceProp prop{};
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  if (prop.major * 10 + prop.minor < 89)
    die(std::string(prop.name) + " is sm_" + std::to_string(prop.major * 10 + prop.minor) +
        ": FP8 mma.sync needs sm_89 or later");
  std::fprintf(stderr, "mma_fp8: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  return run_padded(in, 16, 8, [&](dim3 grid, const uint8_t* a, const uint8_t* bt, const float* c, float* d, int np, int k) {
    if (in.fa == kE4M3 && in.fb == kE4M3) launch<kE4M3, kE4M3>(grid, a, bt, c, d, np, k, promote);
    else if (in.fa == kE4M3) launch<kE4M3, kE5M2>(grid, a, bt, c, d, np, k, promote);
    else if (in.fb == kE4M3) launch<kE5M2, kE4M3>(grid, a, bt, c, d, np, k, promote);
    else launch<kE5M2, kE5M2>(grid, a, bt, c, d, np, k, promote);
  });
}

}  // namespace

int main(int argc, char** argv) {
  g_tool = "mma_fp8";
  std::string dir, out, mode = "chain";
  int promote = 0;
  bool dry = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--mode") mode = value();
    else if (arg == "--promote") promote = std::atoi(value().c_str());
    else if (arg == "--out") out = value();
    else if (arg == "--dry") dry = true;
    else if (arg == "-h" || arg == "--help") {
      std::printf("usage: mma_fp8 DIR [--mode chain|single] [--promote P] [--dry] [--out D.bin]\n");
      return 0;
    } else if (!arg.empty() && arg[0] == '-') die("unknown option " + arg);
    else if (dir.empty()) dir = arg;
    else die("one DIR only");
  }
  if (dir.empty()) die("usage: mma_fp8 DIR [--mode chain|single] [--promote P] [--dry] [--out D.bin]");
  if (mode != "chain" && mode != "single") die("--mode: chain or single");
  if (promote < 0 || promote % 32 != 0) die("--promote: a multiple of 32 (0: none)");
  if (out.empty()) out = dir + "/d.bin";
  const Inputs in = read_inputs(dir);
  if (in.k % 32 != 0)  // padding K with +0 products would change signed-zero results
    die("K = " + std::to_string(in.k) + ": K must be a multiple of 32 (one mma per 32)");
  if (mode == "single" && in.k != 32) die("--mode single: one instruction, K must be 32, not " + std::to_string(in.k));
  if (dry && promote) die("--dry computes fp32_sequential; --promote is for the device");
  const std::vector<float> d = dry ? host_dot(in) : device_dot(in, promote);
  write_d(out, d);
  std::fprintf(stderr, "mma_fp8: %s: %d x %d of K = %d (%s x %s%s), %s%s -> %s\n", dir.c_str(), in.m, in.n, in.k,
               in.fa == kE4M3 ? "e4m3" : "e5m2", in.fb == kE4M3 ? "e4m3" : "e5m2", in.has_c ? ", C" : "",
               dry ? "host fp32_sequential (--dry)" : ("mma.sync " + mode).c_str(),
               promote ? (", promote " + std::to_string(promote)).c_str() : "", out.c_str());
  return 0;
}
