// numerics/isa.hpp: the one fallback rule of every kernel family (dispatch) and the forced ISA
// of a call (resolve_isa).
#include "fp8q/numerics/isa.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fp8q {
namespace {

// A family's entries as names, "" where it lacks one; `called` records which entries ran.
struct Family {
  const char *generic, *avx2, *avx512, *neon;
};

std::string pick(const Family& f, Isa isa, std::vector<std::string>& called) {
  auto entry = [&](const char* tag, const char* name) {
    return [&called, tag, name]() -> const char* {
      called.push_back(tag);
      return *name != 0 ? name : nullptr;
    };
  };
  return dispatch(isa, entry("generic", f.generic), entry("avx2", f.avx2), entry("avx512", f.avx512),
                  entry("neon", f.neon));
}

TEST(Dispatch, OwnEntryElseTheNarrowerOnesItImplies) {
  const Family full{"g", "a2", "a5", "n"}, no512{"g", "a2", "", "n"}, none{"g", "", "", ""};
  std::vector<std::string> called;
  EXPECT_EQ(pick(full, Isa::kAvx512, called), "a5");
  EXPECT_EQ(pick(full, Isa::kAvx2, called), "a2");
  EXPECT_EQ(pick(full, Isa::kNeon, called), "n");
  EXPECT_EQ(pick(full, Isa::kGeneric, called), "g");
  EXPECT_EQ(pick(no512, Isa::kAvx512, called), "a2");  // AVX-512 -> AVX2
  EXPECT_EQ(pick(none, Isa::kAvx512, called), "g");    // -> generic
  EXPECT_EQ(pick(none, Isa::kAvx2, called), "g");
  EXPECT_EQ(pick(none, Isa::kNeon, called), "g");
}

// Only the entries on the way are called: an ISA's translation unit never runs on a CPU that
// lacks the ISA (AVX2 for AVX-512's fallback, never the other way, never NEON on x86).
TEST(Dispatch, CallsOnlyTheEntriesItTries) {
  const Family no512{"g", "a2", "", "n"};
  std::vector<std::string> called;
  pick(no512, Isa::kAvx512, called);
  EXPECT_EQ(called, (std::vector<std::string>{"avx512", "avx2"}));
  called.clear();
  pick(no512, Isa::kAvx2, called);
  EXPECT_EQ(called, (std::vector<std::string>{"avx2"}));
  called.clear();
  pick(no512, Isa::kGeneric, called);
  EXPECT_EQ(called, (std::vector<std::string>{"generic"}));
}

TEST(ResolveIsa, ForcedWhereSupportedElseAnErrorNamingTheOption) {
  EXPECT_EQ(resolve_isa(std::nullopt, "X::isa"), active_isa());
  EXPECT_EQ(resolve_isa(Isa::kGeneric, "X::isa"), Isa::kGeneric);
  for (Isa isa : kAllIsas) {
    if (isa_supported(isa)) {
      EXPECT_EQ(resolve_isa(isa, "X::isa"), isa);
      continue;
    }
    try {
      resolve_isa(isa, "GemmOptions::isa");
      ADD_FAILURE() << isa_name(isa) << " is not supported here, yet it was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "GemmOptions::isa: instruction set " + std::string(isa_name(isa)) + " is not available here");
    }
  }
}

}  // namespace
}  // namespace fp8q
