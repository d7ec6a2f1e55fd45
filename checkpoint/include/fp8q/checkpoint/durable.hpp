// fp8q/checkpoint/durable.hpp: outputs that survive a crash. A rename publishes a file or a
// directory atomically for other processes, but after a power cut the new name can point at
// data still in the page cache (an empty or short file). So each file is fsync'ed before the
// rename that publishes it, a staging directory too (its entries), and the directory that
// holds the new name after it (the rename itself).
#pragma once

#include <filesystem>

namespace fp8q::checkpoint {

// fsync(fd) of the open file `what` (named in the error). Throws std::system_error.
void sync_fd(int fd, const std::filesystem::path& what);
// Opens `path` (a regular file or a directory) read-only and fsyncs it. Throws
// std::system_error naming it.
void sync_path(const std::filesystem::path& path);
// sync_path() of the directory that holds `path` ("." for a bare name).
void sync_parent(const std::filesystem::path& path);
// sync_path() of every regular file and directory under `dir`, then of `dir`: what a
// directory built in place needs before it is renamed into view.
void sync_tree(const std::filesystem::path& dir);

// For tests: called with the path of each successful fsync, in order (nullptr: none). Not
// synchronized: set it while no output is being written.
using SyncObserver = void (*)(const std::filesystem::path&);
void set_sync_observer(SyncObserver observer) noexcept;

}  // namespace fp8q::checkpoint
