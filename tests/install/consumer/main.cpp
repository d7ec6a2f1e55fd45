// A downstream program that uses the installed fp8q: enough elements to run the SIMD
// kernels, checked against the scalar reference; 465 -> e4m3fn saturates to 448.
#include <fp8q/numerics/bulk.hpp>
#include <fp8q/numerics/convert.hpp>

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 500.0f) * 0.93f;
  x[1] = 465.0f;
  std::vector<std::uint8_t> q(x.size());
  fp8q::convert(x, q, fp8q::kE4M3FN, {}, {.threads = 2});
  bool ok = q[1] == 0x7E && fp8q::decode_f32(q[1], fp8q::kE4M3FN) == 448.0f;
  for (std::size_t i = 0; i < x.size(); ++i) ok = ok && q[i] == fp8q::encode_f32(x[i], fp8q::kE4M3FN);
  std::printf("consumer (%s path): %s\n", fp8q::isa_name(fp8q::active_isa()).data(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
