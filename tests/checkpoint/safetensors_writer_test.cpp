// safetensors Writer: nothing is left behind unless commit() succeeds, the destination is
// replaced only at commit(), and misuse is reported naming the tensor.
#include <gtest/gtest.h>

#include <system_error>

#include "fp8q/checkpoint/stop.hpp"
#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::pattern_bytes;
using testing::ScratchDir;

const std::vector<TensorSpec> kSpecs = {{"a", DType::kF32, {2, 2}}, {"b", DType::kU8, {5}}};  // 16 + 5 bytes

template <class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(SafetensorsWriter, BuildsUnderATemporaryNameAndRenamesAtCommit) {
  ScratchDir dir;
  const auto data = pattern_bytes(21, 1);
  Writer w(dir / "out.safetensors", kSpecs);
  const auto during = dir.entries();
  ASSERT_EQ(during.size(), 1u);
  EXPECT_TRUE(during[0].starts_with(".out.safetensors.tmp.")) << during[0];
  w.write({data.data(), 21});
  EXPECT_FALSE(std::filesystem::exists(dir / "out.safetensors"));
  w.commit();
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
  EXPECT_EQ(Reader(dir / "out.safetensors").tensors().size(), 2u);
}

TEST(SafetensorsWriter, NotCommittedLeavesNothing) {
  ScratchDir dir;
  {
    Writer w(dir / "out.safetensors", kSpecs);
    w.write(pattern_bytes(21, 1));  // complete, but never committed
  }
  EXPECT_TRUE(dir.entries().empty());
  {
    Writer w(dir / "out.safetensors", kSpecs);  // nothing written at all
  }
  EXPECT_TRUE(dir.entries().empty());
}

// A stop request (a signal, in the CLI) unwinds the writer at its next write and leaves
// nothing: the temporary file is removed and the destination never appears.
TEST(SafetensorsWriter, AStopRequestUnwindsAndLeavesNothing) {
  ScratchDir dir;
  request_stop(15);
  try {
    Writer w(dir / "out.safetensors", kSpecs);
    w.write(pattern_bytes(21, 1));
    w.commit();
    ADD_FAILURE() << "a requested stop was not honoured";
  } catch (const Stopped& e) {
    EXPECT_EQ(e.signal(), 15);
  }
  clear_stop();
  EXPECT_TRUE(dir.entries().empty());
  Writer w(dir / "out.safetensors", kSpecs);  // cleared: writes again
  w.write(pattern_bytes(21, 1));
  w.commit();
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
}

TEST(SafetensorsWriter, ExistingFileIsReplacedOnlyByCommit) {
  ScratchDir dir;
  testing::write_raw(dir / "out.safetensors", "old contents");
  {
    Writer w(dir / "out.safetensors", kSpecs);
    w.write(pattern_bytes(21, 2));
    EXPECT_EQ(testing::read_raw(dir / "out.safetensors"), "old contents");
  }  // abandoned: the old file is untouched
  EXPECT_EQ(testing::read_raw(dir / "out.safetensors"), "old contents");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
  Writer w(dir / "out.safetensors", kSpecs);
  w.write(pattern_bytes(21, 2));
  w.commit();
  EXPECT_NE(testing::read_raw(dir / "out.safetensors"), "old contents");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
}

TEST(SafetensorsWriter, CommitWithMissingBytesNamesTheTensorAndLeavesNothing) {
  ScratchDir dir;
  {
    Writer w(dir / "out.safetensors", kSpecs);
    w.write(pattern_bytes(18, 3));  // all of "a", 2 of the 5 bytes of "b"
    const std::string m = message_of([&] { w.commit(); });
    EXPECT_NE(m.find("tensor \"b\" incomplete (2 of 5 bytes written; 3 bytes missing in all)"), std::string::npos) << m;
    EXPECT_THROW(w.commit(), std::logic_error);
  }
  EXPECT_TRUE(dir.entries().empty());
  // The writer stays usable after that error: finishing the data lets commit() succeed.
  Writer w(dir / "out.safetensors", kSpecs);
  w.write(pattern_bytes(10, 3));
  EXPECT_NE(message_of([&] { w.commit(); }).find("tensor \"a\" incomplete (10 of 16"), std::string::npos);
  w.write(pattern_bytes(11, 3));
  w.commit();
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
}

TEST(SafetensorsWriter, WritingMoreThanDeclaredIsRefusedWithoutWriting) {
  ScratchDir dir;
  Writer w(dir / "out.safetensors", kSpecs);
  w.write(pattern_bytes(20, 4));
  const std::string m = message_of([&] { w.write(pattern_bytes(2, 4)); });
  EXPECT_NE(m.find("writing 2 more bytes exceeds the 21 bytes declared (20 already written)"), std::string::npos) << m;
  EXPECT_EQ(w.bytes_written(), 20u);
  w.write(pattern_bytes(1, 4));
  w.commit();
  EXPECT_THROW(w.write(pattern_bytes(0, 4)), std::logic_error);  // after commit
  EXPECT_THROW(w.commit(), std::logic_error);
  EXPECT_EQ(Reader(dir / "out.safetensors").bytes(Reader(dir / "out.safetensors").at("b")).size(), 5u);
}

TEST(SafetensorsWriter, FailedRenameLeavesNothingBehind) {
  // The destination becomes a non-empty directory after the writer started: rename(2)
  // fails at commit, which must report the path and remove the temporary file.
  ScratchDir dir;
  Writer w(dir / "out.safetensors", kSpecs);
  w.write(pattern_bytes(21, 5));
  std::filesystem::create_directory(dir / "out.safetensors");
  testing::write_raw(dir / "out.safetensors" / "keep", "x");
  try {
    w.commit();
    FAIL() << "renamed onto a directory";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "out.safetensors").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
  EXPECT_TRUE(std::filesystem::is_directory(dir / "out.safetensors"));
  EXPECT_THROW(w.commit(), std::logic_error);
}

TEST(SafetensorsWriter, RefusesADirectoryOrAMissingFolder) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "sub");
  try {
    Writer w(dir / "sub", kSpecs);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::is_a_directory));
    EXPECT_NE(std::string(e.what()).find((dir / "sub").string()), std::string::npos) << e.what();
  }
  try {
    Writer w(dir / "no" / "such" / "x.safetensors", kSpecs);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::no_such_file_or_directory));
    EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"sub"});
  EXPECT_TRUE(std::filesystem::is_empty(dir / "sub"));
}

TEST(SafetensorsWriter, InvalidDeclarationsNameTheTensorAndCreateNothing) {
  ScratchDir dir;
  struct Bad {
    std::vector<TensorSpec> specs;
    std::map<std::string, std::string> meta;
    std::string expect;
  };
  const Bad bad[] = {
      {{{"a", DType::kU8, {1}}, {"a", DType::kU8, {1}}}, {}, "tensor \"a\": declared twice"},
      {{{"__metadata__", DType::kU8, {1}}}, {}, "tensor \"__metadata__\": the name is reserved"},
      {{{"bad\xFF", DType::kU8, {1}}}, {}, "is not valid UTF-8"},
      {{{"huge", DType::kF64, {std::uint64_t{1} << 61, 2}}}, {}, "tensor \"huge\": shape: the byte size overflows"},
      {{{"x", static_cast<DType>(99), {1}}}, {}, "tensor \"x\": dtype: invalid DType value 99"},
      {{{"x", DType::kU8, {1}}}, {{"k", "\xC0\xAF"}}, "__metadata__: key \"k\""},
  };
  for (const Bad& b : bad) {
    const std::string m = message_of([&] { Writer w(dir / "out.safetensors", b.specs, b.meta); });
    EXPECT_NE(m.find(b.expect), std::string::npos) << m;
    EXPECT_THROW(Writer(dir / "out.safetensors", b.specs, b.meta), std::invalid_argument);
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(SafetensorsWriter, WriteFileChecksByteCountsBeforeCreatingAnything) {
  ScratchDir dir;
  const auto four = pattern_bytes(4, 6);
  const TensorData tensors[] = {{{"ok", DType::kU8, {4}}, four}, {{"short", DType::kF32, {2}}, four}};
  const std::string m = message_of([&] { write_file(dir / "out.safetensors", tensors); });
  EXPECT_NE(m.find("tensor \"short\": 4 bytes given, its shape and dtype need 8"), std::string::npos) << m;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(SafetensorsWriter, MovingTransfersTheTemporaryFile) {
  ScratchDir dir;
  Writer a(dir / "a.safetensors", kSpecs);
  Writer b(std::move(a));
  b.write(pattern_bytes(21, 7));
  Writer c(dir / "c.safetensors", kSpecs);
  EXPECT_EQ(dir.entries().size(), 2u);
  c = std::move(b);  // c's own temporary ("c.safetensors") is discarded
  EXPECT_EQ(dir.entries().size(), 1u);
  c.commit();
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.safetensors"});
}

TEST(SafetensorsWriter, RelativePathWritesInTheCurrentDirectory) {
  ScratchDir dir;
  const auto old = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  try {
    write_file("rel.safetensors", {});
  } catch (...) {
    std::filesystem::current_path(old);
    throw;
  }
  std::filesystem::current_path(old);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"rel.safetensors"});
}

}  // namespace
}  // namespace fp8q::checkpoint
