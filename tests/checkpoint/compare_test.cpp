// checkpoint/compare.hpp: two safetensors files compared tensor by tensor: every tensor with
// its dtype's format, dtype and shape mismatches reported by name, a tensor only one file has
// refused naming it and the file, and the multi-dimensional index of an element.
#include "fp8q/checkpoint/compare.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::ScratchDir;

template <class T>
TensorData tensor(const std::string& name, DType dtype, std::vector<std::uint64_t> shape, const std::vector<T>& v) {
  return {{name, dtype, std::move(shape)}, std::as_bytes(std::span<const T>(v))};
}

TEST(CompareFiles, EveryTensorWithItsDtypesFormat) {
  ScratchDir dir;
  const std::vector<float> f = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::vector<float> g = f;
  std::uint32_t bits;
  std::memcpy(&bits, &g[4], 4);
  bits += 2;  // two steps above 5.0f
  std::memcpy(&g[4], &bits, 4);
  const std::vector<std::uint8_t> q = {0x38, 0x00}, q2 = {0x38, 0x80};  // e4m3fn 1, +0 / -0
  const std::vector<std::int32_t> n = {7, 8};
  write_file(dir / "a.st", std::vector{tensor("d", DType::kF32, {2, 3}, g), tensor("q", DType::kF8_E4M3, {2}, q2),
                                       tensor("n", DType::kI32, {2}, n)});
  write_file(dir / "b.st", std::vector{tensor("q", DType::kF8_E4M3, {2}, q), tensor("d", DType::kF32, {2, 3}, f),
                                       tensor("n", DType::kI32, {2}, n)});
  const Reader a(dir / "a.st"), b(dir / "b.st");
  const auto r = compare_files(a, b, {}, {.ulps = 1});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "d");  // the actual file's order
  EXPECT_EQ(r[0].codes.max_ulps, 2u);
  EXPECT_FALSE(r[0].within());
  EXPECT_EQ(unravel_index(r[0].codes.worst[0].index, r[0].shape), (std::vector<std::uint64_t>{1, 1}));
  EXPECT_EQ(r[1].codes.signed_zero, 1u);
  EXPECT_TRUE(r[1].within());  // 0 ULP, within 1
  EXPECT_TRUE(r[2].within());
  const std::vector<std::string> only = {"q"};
  const auto bitwise = compare_files(a, b, only, {});
  ASSERT_EQ(bitwise.size(), 1u);
  EXPECT_FALSE(bitwise[0].within());  // +0 against -0 is not bit-equal
}

TEST(CompareFiles, DtypeAndShapeMismatchesAreResults) {
  ScratchDir dir;
  const std::vector<float> f(6, 1.0f);
  const std::vector<std::uint16_t> h(6, 0x3F80);
  write_file(dir / "a.st", std::vector{tensor("x", DType::kF32, {6}, f), tensor("y", DType::kF32, {2, 3}, f)});
  write_file(dir / "b.st", std::vector{tensor("x", DType::kBF16, {6}, h), tensor("y", DType::kF32, {3, 2}, f)});
  const auto r = compare_files(Reader(dir / "a.st"), Reader(dir / "b.st"), {}, {});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].mismatch, "dtype F32 against BF16");
  EXPECT_EQ(r[1].mismatch, "shape [2, 3] against [3, 2]");
  EXPECT_FALSE(r[0].within() || r[1].within());
}

TEST(CompareFiles, ATensorOnlyOneFileHasIsNamed) {
  ScratchDir dir;
  const std::vector<float> f(2, 1.0f);
  write_file(dir / "a.st", std::vector{tensor("x", DType::kF32, {2}, f), tensor("extra", DType::kF32, {2}, f)});
  write_file(dir / "b.st", std::vector{tensor("x", DType::kF32, {2}, f)});
  const Reader a(dir / "a.st"), b(dir / "b.st");
  const auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::string m1 = message([&] { compare_files(a, b, {}, {}); });
  EXPECT_NE(m1.find("b.st: no tensor \"extra\" (" + (dir / "a.st").string() + " has it)"), std::string::npos) << m1;
  const std::string m2 = message([&] { compare_files(b, a, {}, {}); });  // in `expected` only
  EXPECT_NE(m2.find("b.st: no tensor \"extra\""), std::string::npos) << m2;
  const std::vector<std::string> missing = {"nope"};
  EXPECT_NE(message([&] { compare_files(a, b, missing, {}); }).find("\"nope\" (in neither file)"), std::string::npos);
}

TEST(CompareFiles, UnravelIndexIsRowMajor) {
  const std::vector<std::uint64_t> shape = {2, 3, 4};
  EXPECT_EQ(unravel_index(23, shape), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(unravel_index(5, shape), (std::vector<std::uint64_t>{0, 1, 1}));
  EXPECT_TRUE(unravel_index(0, std::vector<std::uint64_t>{}).empty());
}

}  // namespace
}  // namespace fp8q::checkpoint
