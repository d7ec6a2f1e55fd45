// A downstream program that uses the installed fp8q: 465 -> e4m3fn saturates to 448.
#include <fp8q/numerics/bulk.hpp>
#include <fp8q/numerics/convert.hpp>

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> x = {1.0f, 465.0f, -0.0f};
  std::vector<std::uint8_t> q(x.size());
  fp8q::convert(x, q, fp8q::kE4M3FN);
  const bool ok = q[0] == 0x38 && q[1] == 0x7E && q[2] == 0x80 && fp8q::decode_f32(q[1], fp8q::kE4M3FN) == 448.0f;
  std::printf("consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
