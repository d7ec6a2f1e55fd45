#include "pipeline/output_dir.hpp"

#include <unistd.h>

#include "fp8q/checkpoint/durable.hpp"

#include <atomic>
#include <random>
#include <string>
#include <system_error>

namespace fp8q::checkpoint::pipeline {
namespace fs = std::filesystem;

fs::path sibling_name(const fs::path& target, const char* tag) {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    // (appended piece by piece, not "." + name: GCC 12 -Wrestrict false positive)
    std::string name = target.filename().string();
    name.insert(name.begin(), '.');
    name += std::string(".") + tag + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) +
            std::to_string(rd() % 100000);
    const fs::path p = parent / name;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return p;
  }
  throw std::system_error(std::make_error_code(std::errc::file_exists), target.string() + ": no free temporary name");
}

StagingDir::StagingDir(fs::path target) : target_(std::move(target)) {
  for (int attempt = 0;; ++attempt) {
    staging_ = sibling_name(target_, "tmp");
    std::error_code ec;
    if (fs::create_directory(staging_, ec)) return;
    if (ec && attempt > 10) throw std::system_error(ec, staging_.string() + ": cannot create the staging directory");
  }
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);  // best effort: nothing of a failed run is left behind
}

void StagingDir::commit() {
  sync_tree(staging_);  // every file and the directory's entries on disk before the rename
  std::error_code ec;
  fs::path aside;
  if (fs::exists(fs::symlink_status(target_, ec))) {
    aside = sibling_name(target_, "old");
    fs::rename(target_, aside);  // throws filesystem_error (a system_error) naming both paths
  }
  try {
    fs::rename(staging_, target_);
  } catch (...) {
    if (!aside.empty()) fs::rename(aside, target_, ec);
    throw;
  }
  committed_ = true;
  sync_parent(target_);  // the rename itself
  if (!aside.empty()) fs::remove_all(aside, ec);
}

}  // namespace fp8q::checkpoint::pipeline
