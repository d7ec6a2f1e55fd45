// Internal: writes one quantized weight's output tensors into a shard's Writer on a
// background thread, while the pipeline goes on measuring that weight and quantizing the
// next one. The bytes and their order are exactly those of writing in line: one batch at a
// time, each batch waited for before the next starts (and before the Writer is committed),
// so at most one weight's output is held in memory beside the one being made.
#pragma once

#include <exception>
#include <thread>
#include <vector>

#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint::pipeline {

class WriteBehind {
 public:
  explicit WriteBehind(Writer& writer) : writer_(writer) {}
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;
  // Waits for the batch in flight (its error, if any, is dropped: the caller is already
  // leaving on an error of its own, or has called wait()).
  ~WriteBehind();

  // Waits for the previous batch (rethrowing its error), then writes `tensors` in order on a
  // background thread (in line, on this thread, if no thread can be started).
  void write(std::vector<OutputTensor> tensors);
  // Waits for the batch in flight; rethrows what its Writer::write threw.
  void wait();

 private:
  Writer& writer_;
  std::vector<OutputTensor> batch_;
  std::thread thread_;
  std::exception_ptr error_;
};

}  // namespace fp8q::checkpoint::pipeline
