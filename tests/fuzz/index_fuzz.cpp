// libFuzzer target for parse_index() (model.safetensors.index.json): built with
// -DFP8Q_FUZZ=ON under Clang; see docs/drafts/checkpoint_quantize.md.
#include "index_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fp8q::checkpoint::fuzz::index_one_input({reinterpret_cast<const char*>(data), size});
  return 0;
}
