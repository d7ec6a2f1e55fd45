// A downstream test suite that uses the installed GoogleMock matchers (fp8q/testing/matchers.hpp):
// an fp8 code off by one step fails BitEqual and passes WithinUlps(1).
#include <fp8q/testing/matchers.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

TEST(Consumer, MatchersFromTheInstalledHeader) {
  const std::vector<std::uint8_t> want = {0x38, 0x7E}, got = {0x38, 0x7D};  // e4m3fn 1, 448 / 416
  EXPECT_THAT(got, ::testing::Not(fp8q::testing::BitEqual(want, fp8q::kE4M3FN)));
  EXPECT_THAT(got, fp8q::testing::WithinUlps(want, 1, fp8q::kE4M3FN));
  EXPECT_THAT(1.0f, fp8q::testing::BitEqual(1.0f));
}
