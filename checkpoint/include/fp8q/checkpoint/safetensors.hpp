// fp8q/checkpoint/safetensors.hpp: the safetensors file format, read (memory-mapped) and
// written (streaming, atomically renamed into place).
//
// Layout of a file (https://github.com/huggingface/safetensors, "Format"):
//
//   [8 bytes]  N, little-endian u64: the length of the header
//   [N bytes]  the header: UTF-8 JSON, one object
//                { "<tensor name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
//                  ...,
//                  "__metadata__": {"<key>": "<string value>", ...} }      (optional)
//   [rest]     the data section; tensor t's bytes are [b, e) relative to its start,
//              row-major, little-endian
//
// The reader trusts nothing: parse_header() checks every field and that the tensors tile
// the data section exactly (no overlap, no gap, no trailing bytes); any violation is a
// FormatError naming the file, the tensor and the field. The writer pads the header with
// spaces so the data section starts at a multiple of 8 bytes (8 + N = 0 mod 8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/numerics/format.hpp"

namespace fp8q::checkpoint {

// ---- element types ----------------------------------------------------------------------------
// The safetensors dtype strings; every one of these is a whole number of bytes per element.
enum class DType : std::uint8_t {
  kBool, kU8, kI8, kF8_E4M3, kF8_E5M2, kF8_E8M0,  // 1 byte (F8_E4M3 is OCP e4m3fn)
  kI16, kU16, kF16, kBF16,                        // 2 bytes
  kI32, kU32, kF32,                               // 4 bytes
  kF64, kI64, kU64,                               // 8 bytes
};
inline constexpr std::size_t kDTypeCount = 16;

// "BOOL","U8","I8","F8_E4M3","F8_E5M2","F8_E8M0","I16","U16","F16","BF16","I32","U32","F32",
// "F64","I64","U64" (exact, case-sensitive, as the format writes them); anything else: nullopt.
std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType dtype);
std::size_t dtype_bytes(DType dtype);
// The fp8q format of a floating dtype that fp8q quantizes from (F32, BF16, F16); nullptr otherwise.
const Format* floating_format(DType dtype);
// The fp8q format of every floating dtype (F64, F32, BF16, F16, F8_E4M3 = e4m3fn, F8_E5M2,
// F8_E8M0); nullptr for the integers and BOOL.
const Format* element_format(DType dtype);

// ---- errors -----------------------------------------------------------------------------------
// A file that is not a valid safetensors file. The message names the file, the tensor and
// the field, e.g.  model.safetensors: tensor "w": data_offsets: end 40 is beyond the data
// section (32 bytes).  Operating-system failures are std::system_error naming the path.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- header -----------------------------------------------------------------------------------
struct TensorInfo {
  std::string name;
  DType dtype = DType::kU8;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0, end = 0;  // data_offsets, relative to the start of the data section
  // Product of shape (1 for a 0-D tensor, 0 if any extent is 0). Every TensorInfo that
  // parse_header() returns fits; for one built by hand an overflow throws std::overflow_error.
  std::uint64_t numel() const;
  std::uint64_t byte_size() const { return end - begin; }
};

struct Header {
  std::vector<TensorInfo> tensors;               // sorted by begin offset (then end, then name)
  std::map<std::string, std::string> metadata;   // "__metadata__" (string -> string)
  std::uint64_t data_start = 0;                  // 8 + header length
};

// Largest header accepted, in bytes (as the reference implementation): a larger length field
// is far more likely garbage than a real header, and would make the parser allocate for it.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

// Parses and validates a whole safetensors file image (this is the fuzz entry point): every
// check listed in docs (file shorter than 8 bytes, header length beyond the file or over
// kMaxHeaderBytes, invalid UTF-8 or JSON, duplicate keys, missing/extra/mistyped fields,
// unknown dtype, bad shapes, overflowing sizes, bad data_offsets, tensors that overlap,
// leave gaps or leave trailing bytes, bad __metadata__). `what` names the file in error
// messages. Never reads outside `file`. Throws FormatError.
Header parse_header(std::span<const std::byte> file, std::string_view what);

// The first 8 + N bytes of the file that holds `tensors` (in this order, contiguous from
// offset 0) and `metadata`: the length field and the JSON header, padded with spaces so
// that its size is a multiple of 8. Throws std::invalid_argument naming the tensor for a
// duplicate or reserved name ("__metadata__"), a name or metadata string that is not UTF-8,
// or a shape whose byte size overflows 64 bits; std::length_error past kMaxHeaderBytes.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kU8;
  std::vector<std::uint64_t> shape;
};
std::string serialize_header(std::span<const TensorSpec> tensors,
                             const std::map<std::string, std::string>& metadata = {});

// ---- reader -----------------------------------------------------------------------------------
// Maps the whole file read-only (POSIX mmap) and validates it with parse_header(). The
// views returned by bytes() live as long as the Reader. (As with any mapped file, another
// process truncating the file while it is mapped makes later reads fault; the input files
// of a conversion are expected to stay put.)
class Reader {
 public:
  // Throws FormatError (not a safetensors file, including an empty file) or std::system_error
  // naming the path (cannot open, not a regular file such as a directory, cannot map).
  explicit Reader(const std::filesystem::path& path);
  Reader(Reader&& other) noexcept;
  Reader& operator=(Reader&& other) noexcept;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader();

  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const Header& header() const { return header_; }
  const TensorInfo* find(std::string_view name) const;   // nullptr when absent
  const TensorInfo& at(std::string_view name) const;     // throws FormatError naming the tensor
  // The tensor's bytes (end - begin of them). Throws std::out_of_range for a TensorInfo whose
  // offsets do not lie within this file's data section.
  std::span<const std::byte> bytes(const TensorInfo& t) const;
  std::span<const std::byte> file_bytes() const { return {base_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void release() noexcept;

  std::filesystem::path path_;
  const std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  Header header_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors()
};

// ---- writer -----------------------------------------------------------------------------------
// The file a write to `path` replaces: `path` itself or, where it is a symbolic link (or a
// chain of them), the file the last link names, present or not, so that the link stays a
// link. Throws std::system_error naming the link it cannot read, or after 40 links (a loop).
std::filesystem::path link_target(const std::filesystem::path& path);

// Streaming writer: every tensor is declared up front (the header comes first in the file),
// then the data is written in the declared order, in as many write() calls per tensor as the
// caller likes (a call may also span tensors: the data is one byte stream). The file is built
// under a temporary name in the same directory (".<name>.tmp.<pid>.<random>") and renamed
// onto `path` only by commit(); the destructor removes the temporary if commit() never ran
// or failed, so `path` is either untouched or the complete new file, also after a crash:
// the file is fsync'ed before the rename and its directory after it (durable.hpp).
class Writer {
 public:
  // `path` may be a symbolic link: the file it names is written (link_target()). Throws what
  // serialize_header() throws; std::system_error naming `path` when it is an existing
  // directory or anything else that is not a regular file (a FIFO, a device: the finished file
  // would replace it), the temporary file cannot be created, or the file system has no room
  // for it (its whole size is reserved with fallocate here: ENOSPC before any data).
  Writer(std::filesystem::path path, std::vector<TensorSpec> tensors,
         std::map<std::string, std::string> metadata = {});
  Writer(Writer&& other) noexcept;
  Writer& operator=(Writer&& other) noexcept;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Appends data. Throws std::logic_error (writing nothing) if this would exceed the declared
  // total, or after commit(); std::system_error naming the path for an I/O failure (the
  // writer is then failed: commit() throws and the temporary is removed).
  void write(std::span<const std::byte> bytes);
  // Throws std::logic_error naming the first incomplete tensor if fewer bytes than declared
  // were written (the writer stays usable); otherwise flushes, fsyncs, closes and renames onto
  // `path`, then fsyncs its directory (std::system_error naming the path if that fails; the
  // temporary is removed).
  void commit();

  std::uint64_t bytes_expected() const;   // total data bytes declared
  std::uint64_t bytes_written() const;    // data bytes written so far
  const std::filesystem::path& path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Convenience: write a whole file from in-memory tensors (through Writer). Throws
// std::invalid_argument naming the tensor whose byte count does not match its shape, before
// any file is created.
struct TensorData {
  TensorSpec spec;
  std::span<const std::byte> bytes;
};
void write_file(const std::filesystem::path& path, std::span<const TensorData> tensors,
                const std::map<std::string, std::string>& metadata = {});

}  // namespace fp8q::checkpoint
