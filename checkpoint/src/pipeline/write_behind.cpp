#include "pipeline/write_behind.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace fp8q::checkpoint::pipeline {

WriteJob::WriteJob(Writer& writer, std::vector<std::span<const std::byte>> outputs, std::size_t chunks, Work work)
    : writer_(writer), outputs_(std::move(outputs)), work_(std::move(work)), chunk_errors_(chunks) {
  for (std::size_t t = 0; t < outputs_.size(); ++t) {
    const std::size_t n = outputs_[t].size();
    for (std::size_t o = 0; o < n; o += kWritePiece) pieces_.push_back({t, o, std::min(kWritePiece, n - o)});
  }
  writing_ = !pieces_.empty();
}

void WriteJob::write_next() {
  if (next_piece_ < pieces_.size() && !failed_.load()) {
    const Piece& p = pieces_[next_piece_++];
    try {
      writer_.write(outputs_[p.output].subspan(p.offset, p.size));
    } catch (...) {
      write_error_ = std::current_exception();
      failed_ = true;
    }
  }
  if (next_piece_ == pieces_.size() || failed_.load()) writing_ = false;
}

void WriteJob::run(std::size_t worker) {
  const std::size_t chunks = chunk_errors_.size();
  for (;;) {
    if (writing_.load()) {
      std::unique_lock held(lock_, std::try_to_lock);
      if (held.owns_lock()) {
        write_next();
        continue;
      }
    }
    const std::size_t k = failed_.load() ? chunks : next_chunk_.fetch_add(1);
    if (k < chunks) {
      try {
        work_(k, worker);
      } catch (...) {
        chunk_errors_[k] = std::current_exception();
      }
      continue;
    }
    if (!writing_.load()) return;
    std::lock_guard held(lock_);  // only writing is left: wait for the piece in flight
    write_next();
  }
}

void WriteJob::rethrow() const {
  if (write_error_) std::rethrow_exception(write_error_);
  for (const auto& e : chunk_errors_)
    if (e) std::rethrow_exception(e);
}

JobInFlight::~JobInFlight() {
  if (job_) job_->cancel();
  for (auto& t : helpers_) t.join();
}

void JobInFlight::start(std::unique_ptr<WriteJob> job, int helpers) {
  if (job_) throw std::logic_error("JobInFlight::start: a job is already in flight");
  job_ = std::move(job);
  try {
    for (int h = 1; h <= helpers; ++h) helpers_.emplace_back([j = job_.get(), h] { j->run(static_cast<std::size_t>(h)); });
  } catch (const std::system_error&) {
    // no more threads to be had: the ones started and finish() do the work
  }
}

void JobInFlight::finish() {
  if (!job_) return;
  job_->run(0);
  for (auto& t : helpers_) t.join();
  helpers_.clear();
  const std::unique_ptr<WriteJob> done = std::move(job_);
  done->rethrow();
}

}  // namespace fp8q::checkpoint::pipeline
