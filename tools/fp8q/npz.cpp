// .npz output (npz.hpp): each array a .npy 1.0 member (magic "\x93NUMPY", version 1.0, a
// little-endian u16 header length, a Python dict literal padded with spaces to a multiple of
// 64 bytes ending in '\n', then the data), stored (method 0) in a zip with a central directory.
#include "npz.hpp"

#include <array>
#include <string_view>

#include "files.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zip requires.
std::uint32_t crc32(std::span<const std::byte> data) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::byte b : data) c = table[(c ^ std::to_integer<std::uint32_t>(b)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put(std::vector<std::byte>& out, std::uint64_t v, int bytes) {  // little-endian
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
}
void put(std::vector<std::byte>& out, std::string_view s) {
  for (char ch : s) out.push_back(static_cast<std::byte>(ch));
}

std::vector<std::byte> npy(const NpyArray& a) {
  std::string shape;  // a Python tuple: "(3, 4)", "(5,)", "()"
  for (std::size_t i = 0; i < a.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape[i]);
  shape = "(" + shape + (a.shape.size() == 1 ? ",)" : ")");
  std::string header = "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // magic, version, length: 10 bytes
  header += '\n';
  std::vector<std::byte> out;
  put(out, "\x93NUMPY");
  put(out, 1, 1), put(out, 0, 1), put(out, header.size(), 2);
  put(out, header);
  out.insert(out.end(), a.bytes.begin(), a.bytes.end());
  return out;
}

}  // namespace

void write_npz(const std::string& path, std::span<const NpyArray> arrays) {
  std::vector<std::byte> zip, central;
  for (const NpyArray& a : arrays) {
    const std::vector<std::byte> member = npy(a);
    const std::string name = a.name + ".npy";
    const std::uint32_t crc = crc32(member);
    if (member.size() >= 0xFFFFFFFFu || zip.size() >= 0xFFFFFFFFu)
      throw UsageError(path + ": array '" + a.name + "' is too large for a zip without zip64");
    const std::uint64_t offset = zip.size();
    // local file header: version 2.0, no flags, stored, no time, sizes, the name
    put(zip, 0x04034b50, 4), put(zip, 20, 2), put(zip, 0, 2), put(zip, 0, 2), put(zip, 0, 2), put(zip, 0x21, 2);
    put(zip, crc, 4), put(zip, member.size(), 4), put(zip, member.size(), 4), put(zip, name.size(), 2), put(zip, 0, 2);
    put(zip, name);
    zip.insert(zip.end(), member.begin(), member.end());
    // its central directory entry
    put(central, 0x02014b50, 4), put(central, 20, 2), put(central, 20, 2), put(central, 0, 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0x21, 2), put(central, crc, 4), put(central, member.size(), 4);
    put(central, member.size(), 4), put(central, name.size(), 2), put(central, 0, 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 4), put(central, offset, 4);
    put(central, name);
  }
  const std::uint64_t central_offset = zip.size();
  zip.insert(zip.end(), central.begin(), central.end());
  // end of central directory
  put(zip, 0x06054b50, 4), put(zip, 0, 2), put(zip, 0, 2), put(zip, arrays.size(), 2), put(zip, arrays.size(), 2);
  put(zip, central.size(), 4), put(zip, central_offset, 4), put(zip, 0, 2);
  write_all_atomically(path, zip, "");
}

}  // namespace fp8q::cli
