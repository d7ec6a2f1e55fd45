// pipeline::JobInFlight (checkpoint/src/pipeline/write_behind.hpp): jobs run by background
// helpers and finished by the calling thread give the file that writing in line gives, and a
// failed write is reported by finish(). pipeline::WriteJob on 1..8 threads: the same file for
// any thread count, every chunk run exactly once on a worker index below the thread count,
// and its errors (a failed write first, else the lowest chunk's).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>

#include "pipeline/write_behind.hpp"
#include "safetensors_test_util.hpp"
#include "thread_counts.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::ScratchDir;

OutputTensor tensor(const std::string& name, std::size_t n, std::uint8_t seed) {
  OutputTensor t{{name, DType::kU8, {n}}, std::vector<std::byte>(n)};
  for (std::size_t i = 0; i < n; ++i) t.bytes[i] = static_cast<std::byte>(seed + i * 7);
  return t;
}

std::vector<std::span<const std::byte>> views(const std::vector<OutputTensor>& ts) {
  std::vector<std::span<const std::byte>> v;
  for (const auto& t : ts) v.emplace_back(t.bytes);
  return v;
}

// The pipeline's use: one job after the other, each started with background helpers and
// finished by the calling thread, give the file of writing in line.
TEST(JobInFlight, SameFileAsWritingInLine) {
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
  for (int helpers : {0, 1, 3}) {
    const auto path = dir / ("flight_" + std::to_string(helpers) + ".safetensors");
    Writer w(path, specs);
    pipeline::JobInFlight flight;
    const std::vector<std::vector<OutputTensor>> batches = {{ts[0], ts[1]}, {ts[2]}, {ts[3], ts[4]}};
    std::atomic<int> chunks_run{0};
    for (const auto& batch : batches) {
      flight.finish();
      flight.start(std::make_unique<pipeline::WriteJob>(w, views(batch), 50, [&](std::size_t, std::size_t) { chunks_run++; }),
                   helpers);
      EXPECT_TRUE(flight.active());
    }
    flight.finish();
    EXPECT_FALSE(flight.active());
    w.commit();
    EXPECT_EQ(chunks_run.load(), 150) << helpers << " helpers";
    EXPECT_EQ(testing::read_raw(path), testing::read_raw(dir / "inline.safetensors")) << helpers << " helpers";
  }
}

TEST(JobInFlight, ErrorComesBackAtFinishAndIsDroppedWhenLeaving) {
  ScratchDir dir;
  Writer w(dir / "x.safetensors", {{"a", DType::kU8, {4}}});
  const std::vector<OutputTensor> too_long = {tensor("a", 8, 0)};  // more bytes than declared: Writer::write throws
  {
    pipeline::JobInFlight flight;
    flight.start(std::make_unique<pipeline::WriteJob>(w, views(too_long), 0, nullptr), 1);
    EXPECT_THROW(flight.start(std::make_unique<pipeline::WriteJob>(w, views(too_long), 0, nullptr), 1),
                 std::logic_error);  // one job at a time
    EXPECT_THROW(flight.finish(), std::logic_error);
    flight.finish();  // reported once
  }
  {
    pipeline::JobInFlight flight;
    flight.start(std::make_unique<pipeline::WriteJob>(w, views(too_long), 1000, [](std::size_t, std::size_t) {}), 2);
  }  // left without finish(): the destructor cancels and joins, the error is dropped
  EXPECT_EQ(w.bytes_written(), 0u);
}

// `tensors` and `chunks` of `work` as one WriteJob on `threads` threads (the calling one too).
void write_alongside(Writer& writer, const std::vector<OutputTensor>& tensors, std::size_t chunks,
                     const pipeline::WriteJob::Work& work, int threads) {
  pipeline::JobInFlight flight;
  flight.start(std::make_unique<pipeline::WriteJob>(writer, views(tensors), chunks, work), threads - 1);
  flight.finish();
}

// Sizes around the piece size (kWritePiece) and the writer's 1 MiB gathering buffer.
std::vector<OutputTensor> alongside_tensors() {
  const std::size_t p = pipeline::kWritePiece;
  return {tensor("a", 10, 1),        tensor("b", p - 1, 2), tensor("c", 0, 3), tensor("d", p, 4),
          tensor("e", 3 * p + 5, 5), tensor("f", 1, 6),     tensor("g", p + 1, 7)};
}

TEST(WriteJob, SameFileForEveryThreadCountAndEveryChunkOnce) {
  ScratchDir dir;
  const auto ts = alongside_tensors();
  std::vector<TensorSpec> specs;
  for (const auto& t : ts) specs.push_back(t.spec);
  {
    Writer w(dir / "inline.safetensors", specs);
    for (const auto& t : ts) w.write(t.bytes);
    w.commit();
  }
  const auto want = testing::read_raw(dir / "inline.safetensors");
  for (int threads : test::kThreadCounts) {
    for (std::size_t chunks : {std::size_t{0}, std::size_t{1}, std::size_t{997}}) {
      const std::string what = "threads " + std::to_string(threads) + " chunks " + std::to_string(chunks);
      const auto path = dir / ("alongside_" + std::to_string(threads) + "_" + std::to_string(chunks) + ".safetensors");
      std::vector<std::atomic<int>> runs(chunks);
      std::atomic<bool> worker_in_range{true};
      Writer w(path, specs);
      write_alongside(
          w, ts, chunks,
          [&](std::size_t k, std::size_t worker) {
            runs[k]++;
            if (worker >= static_cast<std::size_t>(threads)) worker_in_range = false;
          },
          threads);
      w.commit();
      EXPECT_EQ(testing::read_raw(path), want) << what;
      for (std::size_t k = 0; k < chunks; ++k) EXPECT_EQ(runs[k].load(), 1) << what << " chunk " << k;
      EXPECT_TRUE(worker_in_range.load()) << what;
    }
  }
}

TEST(WriteJob, ErrorsComeBackInAFixedOrder) {
  ScratchDir dir;
  auto throw_at = [](std::size_t k, std::size_t) {
    if (k == 7 || k == 30) throw std::runtime_error("chunk " + std::to_string(k));
  };
  for (int threads : {1, 2, 4}) {
    {
      // A chunk error: the lowest chunk's, and the output is written completely.
      Writer w(dir / "c.safetensors", {{"a", DType::kU8, {3 << 20}}});
      try {
        write_alongside(w, std::vector{tensor("a", 3 << 20, 1)}, 40, throw_at, threads);
        ADD_FAILURE() << "no error";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "chunk 7");
      }
      EXPECT_EQ(w.bytes_written(), std::uint64_t{3} << 20);
    }
    {
      // A failed write (more bytes than declared) wins over the chunks' errors.
      Writer w(dir / "w.safetensors", {{"a", DType::kU8, {4}}});
      EXPECT_THROW(write_alongside(w, std::vector{tensor("a", 8, 0)}, 40, throw_at, threads), std::logic_error);
      EXPECT_EQ(w.bytes_written(), 0u);
    }
  }
}

}  // namespace
}  // namespace fp8q::checkpoint
