// fsync of files and directories (durable.hpp).
#include "fp8q/checkpoint/durable.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace fp8q::checkpoint {
namespace {
SyncObserver g_observer = nullptr;
}  // namespace

void set_sync_observer(SyncObserver observer) noexcept { g_observer = observer; }

void sync_fd(int fd, const std::filesystem::path& what) {
  int rc;
  do rc = ::fsync(fd);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) throw std::system_error(errno, std::generic_category(), what.string() + ": fsync");
  if (g_observer) g_observer(what);
}

void sync_path(const std::filesystem::path& path) {
  // O_RDONLY: a directory cannot be opened for writing, and fsync needs no write access
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), path.string() + ": cannot open to fsync");
  try {
    sync_fd(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void sync_parent(const std::filesystem::path& path) {
  sync_path(path.has_parent_path() ? path.parent_path() : std::filesystem::path("."));
}

void sync_tree(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() || e.is_directory()) sync_path(e.path());
  sync_path(dir);
}

}  // namespace fp8q::checkpoint
