// The base of the test suites that run once per instruction set (the generic path, AVX2,
// AVX-512): a case whose path this CPU or build lacks is skipped, with a message saying so.
// Instantiate with kEveryIsa and isa_test_name, so that test names end in the path.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fp8q/numerics/isa.hpp"

namespace fp8q::test {

class OnIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU (or build) has no " << isa_name(GetParam()) << " path; not tested here";
  }
};

inline auto every_isa() { return ::testing::ValuesIn(kAllIsas); }
inline std::string isa_test_name(const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); }

}  // namespace fp8q::test
