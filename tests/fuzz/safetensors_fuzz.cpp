// libFuzzer target for parse_header(): built with -DFP8Q_FUZZ=ON under Clang. See
// docs/drafts/safetensors.md for how to run it.
#include "safetensors_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fp8q::checkpoint::fuzz::safetensors_one_input({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
