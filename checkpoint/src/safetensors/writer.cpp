// Writer: header first, then the data streamed in declared order, into a temporary file in
// the destination's directory that commit() renames onto the destination (rename(2) within
// one file system is atomic: readers see the old file or the complete new one, never a
// partial file).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>
#include <system_error>
#include <utility>

#include "fp8q/checkpoint/durable.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/checkpoint/stop.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;  // small writes are gathered to 1 MiB

[[noreturn]] void throw_os(int err, const std::string& message) {
  throw std::system_error(err, std::generic_category(), message);
}

// write(2) until everything is written (it may write less than asked, or be interrupted),
// at most kBufferBytes a call: larger calls cost much more kernel time into the page cache
// (docs/performance.md). Returns 0 or the errno of the failure.
// Between calls it honours a stop request (stop.hpp): Stopped unwinds the writer, which removes
// its temporary file.
int write_fully(int fd, const std::byte* p, std::size_t n) {
  while (n > 0) {
    throw_if_stop_requested();
    const ssize_t w = ::write(fd, p, std::min(n, kBufferBytes));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

}  // namespace

struct Writer::State {
  std::filesystem::path path;        // destination
  std::filesystem::path temp;        // where the file is built; empty once renamed or removed
  std::vector<TensorSpec> tensors;
  std::vector<std::uint64_t> ends;   // ends[i] = data offset where tensor i ends
  std::uint64_t expected = 0;
  std::uint64_t written = 0;
  int fd = -1;
  std::vector<std::byte> buffer;
  bool committed = false;
  bool failed = false;

  // Runs for a never-committed writer, also when the constructor throws part way.
  ~State() {
    if (!committed) discard();
  }

  // Closes and removes the temporary file (after a failure, or when never committed).
  void discard() noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (!temp.empty()) ::unlink(temp.c_str());
    temp.clear();
  }

  // Writes `n` bytes to the file; on failure discards the file and throws.
  void put(const std::byte* p, std::size_t n) {
    if (const int err = write_fully(fd, p, n)) {
      failed = true;
      discard();
      throw_os(err, "writing " + path.string());
    }
  }

  void flush() {
    put(buffer.data(), buffer.size());
    buffer.clear();
  }
};

std::filesystem::path link_target(const std::filesystem::path& path) {
  std::filesystem::path target = path;
  std::error_code ec;
  for (int hops = 0; std::filesystem::is_symlink(std::filesystem::symlink_status(target, ec)); ++hops) {
    if (hops == 40) throw_os(ELOOP, path.string() + ": too many levels of symbolic links");
    const std::filesystem::path next = std::filesystem::read_symlink(target, ec);
    if (ec) throw_os(ec.value(), "reading the link " + target.string());
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target;
}

Writer::Writer(std::filesystem::path path, std::vector<TensorSpec> tensors,
               std::map<std::string, std::string> metadata)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  const std::string header = serialize_header(tensors, metadata);  // validates the tensors
  for (const TensorSpec& t : tensors) {
    s.expected += detail::checked_numel(t.shape).value() * dtype_bytes(t.dtype);  // no overflow: checked above
    s.ends.push_back(s.expected);
  }
  s.tensors = std::move(tensors);
  if (!path.has_filename()) throw_os(EISDIR, "writing " + path.string() + ": the path names no file");
  s.path = link_target(path);
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(s.path, ec);
  if (std::filesystem::is_directory(st)) throw_os(EISDIR, "writing " + s.path.string());
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw_os(EINVAL, "writing " + s.path.string() +
                         ": not a regular file (a FIFO, device or socket), which the finished file would replace");

  // The temporary: ".<name>.tmp.<pid>.<64 random bits>" beside the destination, created with
  // O_EXCL so that it is never someone else's file.
  const std::filesystem::path dir = s.path.has_parent_path() ? s.path.parent_path() : std::filesystem::path(".");
  std::random_device rd;
  for (int attempt = 0; s.fd < 0; ++attempt) {
    char suffix[64];
    const unsigned long long r = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
    std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%016llx", static_cast<long>(::getpid()), r);
    std::string name = s.path.filename().string();  // (appending, not "." + name: GCC 12 -Wrestrict false positive)
    name.insert(name.begin(), '.');
    name += suffix;
    s.temp = dir / name;
    s.fd = ::open(s.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (s.fd < 0) {
      const int err = errno;
      s.temp.clear();
      if (err != EEXIST || attempt >= 16) {
        throw_os(err, "writing " + s.path.string() + ": creating a temporary file in " + dir.string());
      }
    }
  }
  // The whole file's blocks are reserved now (fallocate(2), mode 0: the size is final from
  // the start): a disk too small fails here, before any data is made, and the writes that
  // follow overwrite allocated blocks instead of reserving them page by page (ext4's delayed
  // allocation), which costs less kernel time per byte. A file system without fallocate
  // (EOPNOTSUPP, e.g. some network file systems) just grows with the writes.
  const std::uint64_t file_bytes = header.size() + s.expected;
  if (file_bytes > 0 && ::fallocate(s.fd, 0, 0, static_cast<off_t>(file_bytes)) != 0) {
    const int err = errno;
    if (err != EOPNOTSUPP && err != ENOSYS && err != EINVAL) {
      s.discard();
      throw_os(err, "writing " + s.path.string() + ": reserving " + std::to_string(file_bytes) + " bytes");
    }
  }
  s.buffer.reserve(kBufferBytes);
  s.put(reinterpret_cast<const std::byte*>(header.data()), header.size());
}

Writer::Writer(Writer&& other) noexcept = default;

Writer& Writer::operator=(Writer&& other) noexcept = default;  // the old State removes its file
Writer::~Writer() = default;                                     // State::~State removes the file

void Writer::write(std::span<const std::byte> bytes) {
  if (!state_) throw std::logic_error("safetensors Writer: write() on a moved-from writer");
  State& s = *state_;
  if (s.committed) throw std::logic_error(s.path.string() + ": write() after commit()");
  if (s.failed) throw std::logic_error(s.path.string() + ": write() after a failed write");
  if (bytes.size() > s.expected - s.written) {
    throw std::logic_error(s.path.string() + ": writing " + std::to_string(bytes.size()) + " more bytes exceeds the " +
                           std::to_string(s.expected) + " bytes declared (" + std::to_string(s.written) +
                           " already written)");
  }
  if (s.buffer.size() + bytes.size() <= kBufferBytes) {
    s.buffer.insert(s.buffer.end(), bytes.begin(), bytes.end());
  } else {
    s.flush();
    if (bytes.size() >= kBufferBytes) {
      s.put(bytes.data(), bytes.size());
    } else {
      s.buffer.insert(s.buffer.end(), bytes.begin(), bytes.end());
    }
  }
  s.written += bytes.size();
}

void Writer::commit() {
  if (!state_) throw std::logic_error("safetensors Writer: commit() on a moved-from writer");
  State& s = *state_;
  if (s.committed) throw std::logic_error(s.path.string() + ": commit() called twice");
  if (s.failed) throw std::logic_error(s.path.string() + ": commit() after a failed write");
  if (s.written < s.expected) {
    std::size_t i = 0;
    while (s.ends[i] <= s.written) ++i;  // the first tensor not complete (exists: written < expected)
    const std::uint64_t begin = i == 0 ? 0 : s.ends[i - 1];
    const std::uint64_t have = s.written > begin ? s.written - begin : 0;
    throw std::logic_error(s.path.string() + ": commit() with tensor " + detail::quote(s.tensors[i].name) +
                           " incomplete (" + std::to_string(have) + " of " + std::to_string(s.ends[i] - begin) +
                           " bytes written; " + std::to_string(s.expected - s.written) + " bytes missing in all)");
  }
  s.flush();
  try {
    sync_fd(s.fd, s.temp);  // the data on disk before the name that publishes it
  } catch (...) {
    s.failed = true;
    s.discard();
    throw;
  }
  const int fd = std::exchange(s.fd, -1);
  if (::close(fd) != 0) {
    const int err = errno;
    s.failed = true;
    s.discard();
    throw_os(err, "writing " + s.path.string());
  }
  if (::rename(s.temp.c_str(), s.path.c_str()) != 0) {
    const int err = errno;
    s.failed = true;
    s.discard();
    throw_os(err, "renaming the finished file onto " + s.path.string());
  }
  s.temp.clear();
  s.committed = true;
  sync_parent(s.path);  // the rename itself
}

std::uint64_t Writer::bytes_expected() const { return state_ ? state_->expected : 0; }
std::uint64_t Writer::bytes_written() const { return state_ ? state_->written : 0; }
const std::filesystem::path& Writer::path() const {
  if (!state_) throw std::logic_error("safetensors Writer: path() on a moved-from writer");
  return state_->path;
}

// ---- write_file ---------------------------------------------------------------------------------
void write_file(const std::filesystem::path& path, std::span<const TensorData> tensors,
                const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  specs.reserve(tensors.size());
  for (const TensorData& t : tensors) specs.push_back(t.spec);
  (void)serialize_header(specs, metadata);  // shapes valid: the byte sizes below cannot overflow
  for (const TensorData& t : tensors) {
    const std::uint64_t want = detail::checked_numel(t.spec.shape).value() * dtype_bytes(t.spec.dtype);
    if (t.bytes.size() != want) {
      throw std::invalid_argument("writing " + path.string() + ": tensor " + detail::quote(t.spec.name) + ": " +
                                  std::to_string(t.bytes.size()) + " bytes given, its shape and dtype need " +
                                  std::to_string(want));
    }
  }
  Writer writer(path, std::move(specs), metadata);
  for (const TensorData& t : tensors) writer.write(t.bytes);
  writer.commit();
}

}  // namespace fp8q::checkpoint
