#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "fp8q/checkpoint/durable.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/checkpoint/stop.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace fs = std::filesystem;

std::vector<std::byte> read_all(const std::string& path) {
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UsageError("cannot open input '" + path + "': " + std::strerror(errno));
  std::vector<std::byte> data;
  std::size_t used = 0;
  for (;;) {
    if (data.size() - used < (1u << 20)) data.resize(std::max<std::size_t>(data.size() * 2, used + (1u << 20)));
    const ssize_t got = ::read(fd, data.data() + used, data.size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      if (!is_stdin) ::close(fd);
      throw UsageError("cannot read input '" + path + "': " + std::strerror(err));
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  if (!is_stdin) ::close(fd);
  data.resize(used);
  return data;
}

namespace {
void write_fd(int fd, const std::vector<std::byte>& data, const std::string& name) {
  std::size_t done = 0;
  while (done < data.size()) {
    fp8q::checkpoint::throw_if_stop_requested();  // a temporary file is then removed by the caller
    const ssize_t n = ::write(fd, data.data() + done, std::min<std::size_t>(data.size() - done, std::size_t{1} << 24));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError("cannot write '" + name + "': " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}
}  // namespace

void write_all_atomically(const std::string& path, const std::vector<std::byte>& data, const std::string& input_path) {
  if (path == "-") {
    write_fd(STDOUT_FILENO, data, "standard output");
    return;
  }
  std::error_code ec;
  if (input_path != "-" && fs::exists(path, ec) && fs::equivalent(path, input_path, ec))
    throw UsageError("output '" + path + "' is the input file; refusing to overwrite an input");
  // A device or a pipe (/dev/stdout, /dev/null, a FIFO) is written in place: renaming a file
  // over it would replace it. A symbolic link is followed, so the link stays a link.
  const fs::file_status st = fs::status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw UsageError("cannot open output '" + path + "': " + std::strerror(errno));
    try {
      write_fd(fd, data, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  fs::path target;
  try {
    target = fp8q::checkpoint::link_target(path);  // the link's target, even if absent
  } catch (const std::system_error& e) {
    throw UsageError(std::string("output: ") + e.what());
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".fp8q-tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw UsageError("cannot create a temporary file beside '" + path + "': " + std::strerror(errno));
  try {
    write_fd(fd, data, path);
    try {
      fp8q::checkpoint::sync_fd(fd, tmpl);  // the data on disk before the name that publishes it
    } catch (const std::system_error& e) {
      throw UsageError("cannot flush '" + path + "': " + e.code().message());
    }
    const mode_t mask = ::umask(0);  // read the umask back: mkstemp made the file 0600
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    ::close(fd);
  } catch (...) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
  if (std::rename(tmpl.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw UsageError("cannot move the result into '" + path + "': " + std::strerror(err));
  }
  try {
    fp8q::checkpoint::sync_parent(target);  // the rename itself
  } catch (const std::system_error& e) {
    throw UsageError("cannot flush the folder of '" + path + "': " + e.code().message());
  }
}

}  // namespace fp8q::cli
