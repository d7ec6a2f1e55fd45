// A downstream LibTorch program that uses the installed fp8q::torch: convert, quantize /
// dequantize and matmul on at::Tensor, checked against values known exactly. ATen's op
// headers only (<torch/torch.h> would take 15 s to compile).
#include <fp8q/torch/ops.hpp>

#include <ATen/ops/empty.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace {

bool ok = true;

void check(bool cond, const char* what) {
  if (!cond) std::printf("WRONG: %s\n", what);
  ok = ok && cond;
}

at::Tensor floats(std::initializer_list<float> v, std::vector<std::int64_t> shape) {
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  std::memcpy(t.data_ptr(), std::data(v), v.size() * sizeof(float));
  return t;
}

template <class T>
std::vector<T> values(const at::Tensor& t) {
  std::vector<T> v(static_cast<std::size_t>(t.numel()));
  std::memcpy(v.data(), t.data_ptr(), v.size() * sizeof(T));
  return v;
}

}  // namespace

int main() {
  // 465 -> e4m3fn saturates to 448 (0x7E); 1 and -0.5 are exact; +-1000 saturate.
  at::Tensor q = fp8q::torch::convert(floats({465.0f, 1.0f, -0.5f, 1000.0f, -1000.0f}, {5}), "e4m3fn");
  check(q.scalar_type() == at::kFloat8_e4m3fn && q.numel() == 5, "convert's dtype");
  check(values<std::uint8_t>(q) == std::vector<std::uint8_t>{0x7E, 0x38, 0xB0, 0x7E, 0xFE}, "convert's codes");

  // Per-tensor quantization with a power-of-two scale (amax 4: scale 64, scale_inv 1/64):
  // every value exact, so the round trip gives x back.
  at::Tensor x = floats({1.0f, -2.0f, 0.5f, 4.0f}, {2, 2});
  auto [codes, scales] = fp8q::torch::quantize(x, "e4m3fn", "tensor", "multiply", 0, 0.0, /*power_of_two=*/true);
  check(codes.scalar_type() == at::kFloat8_e4m3fn, "quantize's dtype");
  check(values<std::uint8_t>(codes) == std::vector<std::uint8_t>{0x68, 0xF0, 0x60, 0x78}, "quantize's codes");
  check(scales.scalar_type() == at::kFloat && values<float>(scales) == std::vector<float>{1.0f / 64}, "quantize's scale");
  at::Tensor y = fp8q::torch::dequantize(codes, scales, "tensor");
  check(y.scalar_type() == at::kFloat && values<float>(y) == values<float>(x), "dequantize");

  // [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]], exact in e4m3fn and fp32;
  // scale_inv 0.5 and 4 and a bias [1, -1]: [[39, 43], [87, 99]].
  at::Tensor a = fp8q::torch::convert(floats({1, 2, 3, 4}, {2, 2}), "e4m3fn");
  at::Tensor b = fp8q::torch::convert(floats({5, 6, 7, 8}, {2, 2}), "e4m3fn");
  at::Tensor d = fp8q::torch::matmul(a, b, "ocp");
  check(d.scalar_type() == at::kFloat && values<float>(d) == std::vector<float>{19, 22, 43, 50}, "matmul");
  at::Tensor e = fp8q::torch::matmul(a, b, "ocp", "", "", "tensor", floats({0.5f}, {1}), "tensor", floats({4.0f}, {1}),
                                     std::nullopt, floats({1.0f, -1.0f}, {2}));
  check(values<float>(e) == std::vector<float>{39, 43, 87, 99}, "scaled matmul with bias");

  // The library's errors reach C++ callers as c10 exceptions.
  bool threw = false;
  try {
    fp8q::torch::convert(x, "e9m9");
  } catch (const c10::Error&) {
    threw = true;
  }
  check(threw, "an unknown format throws");

  std::printf("torch consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
