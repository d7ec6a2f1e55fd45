// raw_io.cuh: the host side shared by mma_fp8.cu and wgmma_fp8.cu (docs/validation.md, section 6,
// "On a device: the prepared Hopper check"): the raw problem files st_raw.py writes, FP8 decoding,
// the --dry host loop (fp32_sequential) and errors that name the tool.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fp8q_device {

inline const char* g_tool = "fp8q device tool";  // main() names itself

enum Fmt : int { kE4M3 = 0, kE5M2 = 1 };

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", g_tool, what.c_str());
  std::exit(2);
}

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Inputs {
  int m = 0, n = 0, k = 0;
  Fmt fa = kE4M3, fb = kE4M3;
  bool has_c = false;
  std::vector<uint8_t> a, b;  // a: M x K, b: K x N, as in the files
  std::vector<float> c;       // M x N, when has_c
};

inline std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline Fmt parse_fmt(const std::string& s, const std::string& key) {
  if (s == "e4m3fn") return kE4M3;
  if (s == "e5m2") return kE5M2;
  die("meta.txt: " + key + " '" + s + "': the FP8 mma takes e4m3fn or e5m2");
}

inline Inputs read_inputs(const std::string& dir) {
  std::map<std::string, std::string> kv;
  {
    const std::vector<char> text = read_file(dir + "/meta.txt");
    std::istringstream lines(std::string(text.begin(), text.end()));
    std::string key, value;
    while (lines >> key >> value) kv[key] = value;
  }
  auto need = [&](const std::string& key) {
    const auto it = kv.find(key);
    if (it == kv.end()) die(dir + "/meta.txt: no '" + key + "'");
    return it->second;
  };
  auto dim = [&](const std::string& key) {
    const std::string v = need(key);
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || x < 1 || x > (1 << 20)) die(dir + "/meta.txt: " + key + " '" + v + "' is not a size");
    return int(x);
  };
  Inputs in;
  in.m = dim("m"), in.n = dim("n"), in.k = dim("k");
  in.fa = parse_fmt(need("format_a"), "format_a"), in.fb = parse_fmt(need("format_b"), "format_b");
  in.has_c = need("c") == "1";
  auto bytes = [&](const std::string& name, size_t expected) {
    const std::vector<char> v = read_file(dir + "/" + name);
    if (v.size() != expected)
      die(dir + "/" + name + ": " + std::to_string(v.size()) + " bytes, expected " + std::to_string(expected));
    return v;
  };
  const std::vector<char> a = bytes("a.bin", size_t(in.m) * in.k), b = bytes("b.bin", size_t(in.k) * in.n);
  in.a.assign(a.begin(), a.end()), in.b.assign(b.begin(), b.end());
  if (in.has_c) {
    const std::vector<char> c = bytes("c.bin", size_t(in.m) * in.n * 4);
    in.c.resize(size_t(in.m) * in.n);
    std::memcpy(in.c.data(), c.data(), c.size());  // little-endian host, as the file
  }
  return in;
}

// The value of an FP8 code (OCP FP8: e4m3fn has no Inf, S.1111.111 is NaN; e5m2 is IEEE-like).
inline float decode(uint8_t code, Fmt f) {
  const int sign = code >> 7;
  const int ebits = f == kE4M3 ? 4 : 5, mbits = 7 - ebits, bias = f == kE4M3 ? 7 : 15;
  const int e = (code >> mbits) & ((1 << ebits) - 1), mant = code & ((1 << mbits) - 1);
  float v;
  if (f == kE4M3 && e == 15 && mant == 7) v = NAN;
  else if (f == kE5M2 && e == 31) v = mant ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(float(mant), 1 - bias - mbits);           // subnormal: m 2^(emin - mbits)
  else v = std::ldexp(float(mant + (1 << mbits)), e - bias - mbits);        // (1 + m / 2^mbits) 2^(e - bias)
  return sign ? -v : v;
}

// --dry: fp32_sequential on the host, fp32 adds in k order from C (the products are exact).
inline std::vector<float> host_dot(const Inputs& in) {
  std::vector<float> d(size_t(in.m) * in.n);
  for (int i = 0; i < in.m; ++i)
    for (int j = 0; j < in.n; ++j) {
      volatile float acc = in.has_c ? in.c[size_t(i) * in.n + j] : 0.0f;  // volatile: no reassociation
      for (int k = 0; k < in.k; ++k)
        acc = acc + decode(in.a[size_t(i) * in.k + k], in.fa) * decode(in.b[size_t(k) * in.n + j], in.fb);
      d[size_t(i) * in.n + j] = acc;
    }
  return d;
}

// The device's D for `in`: A, B's columns and C padded to whole tiles (tile_m x tile_n) with +0
// codes and +0, copied to the device; launch(grid, a, bt, c, d, np, k) runs the kernel on the
// padded buffers (a: Mp x K, bt: Np x K, c and d: Mp x Np); only M x N is read back.
template <class Launch>
std::vector<float> run_padded(const Inputs& in, int tile_m, int tile_n, const Launch& launch) {
  const int mp = (in.m + tile_m - 1) / tile_m * tile_m, np = (in.n + tile_n - 1) / tile_n * tile_n, k = in.k;
  std::vector<uint8_t> a(size_t(mp) * k, 0), bt(size_t(np) * k, 0);  // 0x00: +0 in both formats
  std::memcpy(a.data(), in.a.data(), in.a.size());
  for (int kk = 0; kk < k; ++kk)
    for (int j = 0; j < in.n; ++j) bt[size_t(j) * k + kk] = in.b[size_t(kk) * in.n + j];
  std::vector<float> c(size_t(mp) * np, 0.0f);
  for (int i = 0; i < in.m; ++i)
    for (int j = 0; j < in.n; ++j) c[size_t(i) * np + j] = in.has_c ? in.c[size_t(i) * in.n + j] : 0.0f;
  uint8_t *da = nullptr, *db = nullptr;
  float *dc = nullptr, *dd = nullptr;
  cuda_check(cudaMalloc(&da, a.size()), "cudaMalloc a");
  cuda_check(cudaMalloc(&db, bt.size()), "cudaMalloc b");
  cuda_check(cudaMalloc(&dc, c.size() * 4), "cudaMalloc c");
  cuda_check(cudaMalloc(&dd, c.size() * 4), "cudaMalloc d");
  cuda_check(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice), "copy a");
  cuda_check(cudaMemcpy(db, bt.data(), bt.size(), cudaMemcpyHostToDevice), "copy b");
  cuda_check(cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice), "copy c");
  cuda_check(cudaMemset(dd, 0xFF, c.size() * 4), "memset d");  // NaN pattern: an unwritten element shows
  launch(dim3(np / tile_n, mp / tile_m), da, db, dc, dd, np, k);
  cuda_check(cudaGetLastError(), "launch");
  cuda_check(cudaDeviceSynchronize(), "kernel");
  std::vector<float> dp(c.size());
  cuda_check(cudaMemcpy(dp.data(), dd, dp.size() * 4, cudaMemcpyDeviceToHost), "copy d");
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
  std::vector<float> d(size_t(in.m) * in.n);
  for (int i = 0; i < in.m; ++i)
    for (int j = 0; j < in.n; ++j) d[size_t(i) * in.n + j] = dp[size_t(i) * np + j];
  return d;
}

// D (M x N fp32) to `path`.
inline void write_d(const std::string& path, const std::vector<float>& d) {
  std::ofstream o(path, std::ios::binary);
  o.write(reinterpret_cast<const char*>(d.data()), std::streamsize(d.size() * 4));
  if (!o) die("cannot write " + path);
}

}  // namespace fp8q_device
