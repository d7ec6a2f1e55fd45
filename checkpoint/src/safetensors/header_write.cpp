// serialize_header(): the length field and the JSON header for a list of tensors.
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "fp8q/checkpoint/safetensors.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {

std::string serialize_header(std::span<const TensorSpec> tensors,
                             const std::map<std::string, std::string>& metadata) {
  using detail::quote;
  nlohmann::json j = nlohmann::json::object();
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    const std::string who = "tensor " + quote(t.name) + ": ";
    if (t.name == "__metadata__") throw std::invalid_argument(who + "the name is reserved for the metadata");
    if (detail::first_invalid_utf8(t.name)) throw std::invalid_argument(who + "the name is not valid UTF-8");
    if (!names.insert(t.name).second) throw std::invalid_argument(who + "declared twice");
    if (static_cast<std::size_t>(t.dtype) >= kDTypeCount) {
      throw std::invalid_argument(who + "dtype: invalid DType value " + std::to_string(static_cast<int>(t.dtype)));
    }
    const auto numel = detail::checked_numel(t.shape);
    const auto bytes = numel ? detail::checked_mul(*numel, dtype_bytes(t.dtype)) : std::nullopt;
    if (!bytes) throw std::invalid_argument(who + "shape: the byte size overflows 64 bits");
    std::uint64_t end;
    if (__builtin_add_overflow(offset, *bytes, &end)) {
      throw std::invalid_argument(who + "the data section would exceed 2^64 - 1 bytes");
    }
    j[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  for (const auto& [key, value] : metadata) {
    if (detail::first_invalid_utf8(key) || detail::first_invalid_utf8(value)) {
      throw std::invalid_argument("__metadata__: key " + quote(key) + ": the key or its value is not valid UTF-8");
    }
  }
  if (!metadata.empty()) j["__metadata__"] = metadata;

  std::string json = j.dump();
  // Pad with spaces (JSON whitespace) so the data section, at 8 + N, is 8-byte aligned.
  json.append((8 - json.size() % 8) % 8, ' ');
  const std::uint64_t n = json.size();
  if (n > kMaxHeaderBytes) {
    throw std::length_error("safetensors header of " + std::to_string(n) + " bytes is over the limit of " +
                            std::to_string(kMaxHeaderBytes));
  }
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  out += json;
  return out;
}

}  // namespace fp8q::checkpoint
