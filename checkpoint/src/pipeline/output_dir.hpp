// The output directory of a quantization: built under a temporary name beside OUT_DIR and
// renamed into place only when complete (pipeline.hpp, steps 2 and 5).
#pragma once

#include <filesystem>

namespace fp8q::checkpoint::pipeline {

class StagingDir {
 public:
  // Creates ".<name>.tmp.<pid>.<n>" beside `target`. Throws std::system_error.
  explicit StagingDir(std::filesystem::path target);
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir();  // removes the staging directory unless commit() succeeded

  const std::filesystem::path& path() const { return staging_; }
  // fsyncs every file under the staging directory and the directory itself, renames it onto
  // the target, then fsyncs the target's parent (durable.hpp). An existing target (the caller
  // checked --force) is first renamed aside and removed only after the new one is in place; if
  // the final rename fails it is put back.
  void commit();

 private:
  std::filesystem::path target_, staging_;
  bool committed_ = false;
};

// A fresh name ".<name>.<tag>.<pid>.<n>" beside `target` that does not exist yet.
std::filesystem::path sibling_name(const std::filesystem::path& target, const char* tag);

}  // namespace fp8q::checkpoint::pipeline
