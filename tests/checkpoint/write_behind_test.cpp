// pipeline::WriteBehind (checkpoint/src/pipeline/write_behind.hpp): batches written on a
// background thread give the file that writing them in line gives, and a failed write is
// reported by the next wait().
#include <gtest/gtest.h>

#include "pipeline/write_behind.hpp"
#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::ScratchDir;

OutputTensor tensor(const std::string& name, std::size_t n, std::uint8_t seed) {
  OutputTensor t{{name, DType::kU8, {n}}, std::vector<std::byte>(n)};
  for (std::size_t i = 0; i < n; ++i) t.bytes[i] = static_cast<std::byte>(seed + i * 7);
  return t;
}

TEST(WriteBehind, SameFileAsWritingInLine) {
  ScratchDir dir;
  // Sizes below and above the writer's 1 MiB gathering buffer.
  const std::vector<OutputTensor> ts = {tensor("a", 10, 1), tensor("b", 3 << 20, 2), tensor("c", 1000, 3),
                                        tensor("d", (1 << 20) + 1, 4), tensor("e", 1, 5)};
  std::vector<TensorSpec> specs;
  for (const auto& t : ts) specs.push_back(t.spec);
  {
    Writer w(dir / "inline.safetensors", specs);
    for (const auto& t : ts) w.write(t.bytes);
    w.commit();
  }
  {
    Writer w(dir / "behind.safetensors", specs);
    pipeline::WriteBehind behind(w);
    behind.write({ts[0], ts[1]});
    behind.write({ts[2]});
    behind.write({ts[3], ts[4]});
    behind.wait();
    w.commit();
  }
  EXPECT_EQ(testing::read_raw(dir / "behind.safetensors"), testing::read_raw(dir / "inline.safetensors"));
}

TEST(WriteBehind, ErrorComesBackAtTheNextWait) {
  ScratchDir dir;
  Writer w(dir / "x.safetensors", {{"a", DType::kU8, {4}}});
  {
    pipeline::WriteBehind behind(w);
    behind.write({tensor("a", 8, 0)});  // more bytes than declared: Writer::write throws
    EXPECT_THROW(behind.wait(), std::logic_error);
    behind.wait();  // reported once
  }
  {
    pipeline::WriteBehind behind(w);
    behind.write({tensor("a", 8, 0)});
    EXPECT_THROW(behind.write({tensor("a", 4, 0)}), std::logic_error);  // the earlier batch's error
  }
  {
    pipeline::WriteBehind behind(w);
    behind.write({tensor("a", 8, 0)});
  }  // left without wait(): the destructor joins, the error is dropped
  EXPECT_EQ(w.bytes_written(), 0u);
}

}  // namespace
}  // namespace fp8q::checkpoint
