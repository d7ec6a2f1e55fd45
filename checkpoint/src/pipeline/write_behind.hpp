// Internal: how the pipeline writes a quantized weight's output, and measures its error, on
// worker threads while it quantizes the next weight (pipeline.hpp, step 3). The bytes and
// their order are exactly those of writing in line: one job at a time, each finished before
// the next starts (and before the Writer is committed), so at most one weight's output is
// held in memory beside the one being made.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint::pipeline {

// One weight's output, written into `writer` in order, and `chunks` pieces of other work
// (work(k, worker), k in [0, chunks): the pipeline measures the weight's error), shared by
// any number of worker threads so that none waits while there is work: the output goes out
// in pieces of kWritePiece bytes, one piece at a time under a lock, and each worker takes
// the next piece whenever the lock is free and a chunk otherwise (from a shared counter),
// waiting for the lock only when no chunk is left. (A fixed split of the chunks with a
// separate writer thread would leave one core idle while another finished its share.) The
// bytes and their order are those of writing the outputs in line; which worker runs which
// chunk varies, so work(k) must not depend on it (the error sums are kept per chunk and
// added in chunk order).
inline constexpr std::size_t kWritePiece = std::size_t{1} << 20;
class WriteJob {
 public:
  using Work = std::function<void(std::size_t chunk, std::size_t worker)>;
  // `outputs` (views that must outlive the job) are written in this order.
  WriteJob(Writer& writer, std::vector<std::span<const std::byte>> outputs, std::size_t chunks, Work work);
  WriteJob(const WriteJob&) = delete;
  WriteJob& operator=(const WriteJob&) = delete;

  // One worker's share: returns when no piece and no chunk is left to start. `worker` is
  // passed on to work() (the pipeline keeps per-worker scratch buffers).
  void run(std::size_t worker);
  // The pieces and chunks not yet started are skipped (run() returns soon).
  void cancel() { failed_ = true; }
  // After every run() has returned: rethrows the writer's error if a write failed (the
  // remaining pieces and chunks were then skipped), else the error of the lowest chunk that
  // threw.
  void rethrow() const;

 private:
  struct Piece {
    std::size_t output, offset, size;
  };
  void write_next();  // the caller holds lock_

  Writer& writer_;
  std::vector<std::span<const std::byte>> outputs_;
  std::vector<Piece> pieces_;
  Work work_;
  std::mutex lock_;
  std::size_t next_piece_ = 0;          // guarded by lock_
  std::exception_ptr write_error_;      // guarded by lock_
  std::atomic<bool> writing_{false};    // pieces left (false also after a failure or cancel)
  std::atomic<bool> failed_{false};
  std::atomic<std::size_t> next_chunk_{0};
  std::vector<std::exception_ptr> chunk_errors_;
};

// The pipeline's job in flight: a WriteJob that `helpers` background threads (workers
// 1..helpers) start on at once, while the calling thread quantizes the next weight, and
// that the calling thread joins as worker 0 in finish().
class JobInFlight {
 public:
  JobInFlight() = default;
  JobInFlight(const JobInFlight&) = delete;
  JobInFlight& operator=(const JobInFlight&) = delete;
  // Leaving on an error: cancels the job and waits for its threads (its error is dropped).
  ~JobInFlight();

  bool active() const { return job_ != nullptr; }
  // Starts `job` (none may be in flight); with no helper, or none to be had, nothing runs
  // until finish().
  void start(std::unique_ptr<WriteJob> job, int helpers);
  // Works on the job until it is done, waits for the helpers and rethrows the job's error.
  // Does nothing when no job is in flight.
  void finish();

 private:
  std::unique_ptr<WriteJob> job_;
  std::vector<std::thread> helpers_;
};

}  // namespace fp8q::checkpoint::pipeline
