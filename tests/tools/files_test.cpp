// tools/fp8q/files.cpp: write_all_atomically() (the raw outputs of `fp8q convert`) fsyncs the
// temporary file before the rename that publishes it and the folder after it.
#include "files.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fp8q/checkpoint/durable.hpp"

namespace fp8q::cli {
namespace {

namespace fs = std::filesystem;

struct Synced {
  fs::path path;
  bool published;  // the output existed when `path` was fsync'ed
};
std::vector<Synced> g_synced;
fs::path g_published;

void record(const fs::path& p) { g_synced.push_back({p, fs::exists(g_published)}); }

TEST(WriteAllAtomically, SyncsTheFileBeforeTheRenameAndTheFolderAfter) {
  std::string pattern = (fs::temp_directory_path() / "fp8q-files-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern, out = dir / "x.e4m3fn";
  g_published = out;
  checkpoint::set_sync_observer(record);
  write_all_atomically(out.string(), {std::byte{1}, std::byte{2}}, "-");
  checkpoint::set_sync_observer(nullptr);
  std::ifstream f(out, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), std::string("\x01\x02"));
  ASSERT_EQ(g_synced.size(), 2u);
  EXPECT_EQ(g_synced[0].path.parent_path(), dir);  // the temporary file beside the output
  EXPECT_FALSE(g_synced[0].published);
  EXPECT_EQ(g_synced[1].path, dir);
  EXPECT_TRUE(g_synced[1].published);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fp8q::cli
