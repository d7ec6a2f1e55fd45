// checkpoint/durable.hpp through its users: the safetensors Writer and the pipeline's staging
// directory fsync each file before the rename that publishes it, and the directory that holds
// the published name after it. Seen through the sync observer: each fsync'ed path, and whether
// the published name existed at that moment.
#include "fp8q/checkpoint/durable.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "pipeline/output_dir.hpp"
#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

struct Synced {
  fs::path path;
  bool published;  // the published name existed when `path` was fsync'ed
};
std::vector<Synced> g_synced;
fs::path g_published;

void record(const fs::path& p) { g_synced.push_back({p, fs::exists(g_published)}); }

class Durable : public ::testing::Test {
 protected:
  void watch(const fs::path& published) {
    g_synced.clear();
    g_published = published;
    set_sync_observer(record);
  }
  void TearDown() override { set_sync_observer(nullptr); }
};

TEST_F(Durable, WriterSyncsTheFileBeforeTheRenameAndTheFolderAfter) {
  ScratchDir dir;
  const fs::path dest = dir / "out.safetensors";
  watch(dest);
  Writer w(dest, {{"t", DType::kU8, {3}}});
  w.write(testing::as_bytes("abc"));
  w.commit();
  ASSERT_EQ(g_synced.size(), 2u);
  EXPECT_EQ(g_synced[0].path.parent_path(), dir.path());  // the temporary file beside dest
  EXPECT_NE(g_synced[0].path, dest);
  EXPECT_FALSE(g_synced[0].published);
  EXPECT_EQ(g_synced[1].path, dir.path());
  EXPECT_TRUE(g_synced[1].published);
}

TEST_F(Durable, StagingDirSyncsEveryFileAndItselfBeforeTheRenameAndTheParentAfter) {
  ScratchDir dir;
  const fs::path target = dir / "model";
  watch(target);
  pipeline::StagingDir staging(target);
  const fs::path built = staging.path();
  fs::create_directory(built / "sub");
  for (const fs::path name : {"config.json", "sub/tokenizer.json"}) std::ofstream(built / name) << "{}";
  staging.commit();
  std::vector<fs::path> before;
  for (const Synced& s : g_synced)
    if (!s.published) before.push_back(s.path);
  std::sort(before.begin(), before.end());
  EXPECT_EQ(before, (std::vector<fs::path>{built, built / "config.json", built / "sub", built / "sub/tokenizer.json"}));
  ASSERT_FALSE(g_synced.empty());
  EXPECT_EQ(g_synced.back().path, dir.path());
  EXPECT_TRUE(g_synced.back().published);
  EXPECT_EQ(g_synced.size(), before.size() + 1);
}

}  // namespace
}  // namespace fp8q::checkpoint
