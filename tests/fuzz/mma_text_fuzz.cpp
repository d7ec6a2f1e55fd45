// libFuzzer target for parse_mma_text() (the tensor-core measurement text format): built with
// -DFP8Q_FUZZ=ON under Clang (scripts/fuzz.sh).
#include "mma_text_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fp8q::checkpoint::fuzz::mma_text_one_input({reinterpret_cast<const char*>(data), size});
  return 0;
}
