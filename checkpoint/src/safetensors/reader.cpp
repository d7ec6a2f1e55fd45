// Reader: the whole file mapped read-only, validated by parse_header().
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "fp8q/checkpoint/safetensors.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace {

[[noreturn]] void throw_os(int err, const std::filesystem::path& path, std::string_view action) {
  throw std::system_error(err, std::generic_category(), std::string(action) + " " + path.string());
}

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Reader::Reader(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not hang waiting for a writer (it is refused below).
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) throw_os(errno, path, "opening");
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw_os(errno, path, "reading");
  if (S_ISDIR(st.st_mode)) throw_os(EISDIR, path, "reading");
  if (!S_ISREG(st.st_mode)) throw_os(EINVAL, path, "reading (not a regular file)");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < 8) {
    // Too short to hold the length field (mmap of 0 bytes is not even allowed): let the
    // format check word the error, from the few bytes that are there.
    std::byte head[8];
    const ssize_t got = ::pread(file.fd, head, sizeof head, 0);
    if (got < 0) throw_os(errno, path, "reading");
    (void)parse_header({head, static_cast<std::size_t>(got)}, path.string());  // throws
  }
  void* map = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (map == MAP_FAILED) throw_os(errno, path, "mapping");
  base_ = static_cast<const std::byte*>(map);
  size_ = static_cast<std::size_t>(size);
  try {
    header_ = parse_header({base_, size_}, path.string());
    for (std::size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
  } catch (...) {
    release();
    throw;
  }
}

Reader::Reader(Reader&& other) noexcept
    : path_(std::move(other.path_)),
      base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      header_(std::move(other.header_)),
      index_(std::move(other.index_)) {}

Reader& Reader::operator=(Reader&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    header_ = std::move(other.header_);
    index_ = std::move(other.index_);
  }
  return *this;
}

Reader::~Reader() { release(); }

void Reader::release() noexcept {
  if (base_ != nullptr) ::munmap(const_cast<std::byte*>(base_), size_);
  base_ = nullptr;
  size_ = 0;
}

const TensorInfo* Reader::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const TensorInfo& Reader::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw FormatError(path_.string() + ": tensor " + detail::quote(name) + ": not in the file");
}

std::span<const std::byte> Reader::bytes(const TensorInfo& t) const {
  if (base_ == nullptr) throw std::logic_error("safetensors Reader: bytes() on a moved-from reader");
  const std::uint64_t data_size = size_ - header_.data_start;
  if (t.begin > t.end || t.end > data_size) {
    throw std::out_of_range(path_.string() + ": tensor " + detail::quote(t.name) + ": data_offsets [" +
                            std::to_string(t.begin) + ", " + std::to_string(t.end) +
                            ") do not lie within this file's data section");
  }
  return {base_ + header_.data_start + t.begin, static_cast<std::size_t>(t.end - t.begin)};
}

}  // namespace fp8q::checkpoint
