#include "pipeline/write_behind.hpp"

#include <system_error>
#include <utility>

namespace fp8q::checkpoint::pipeline {

WriteBehind::~WriteBehind() {
  if (thread_.joinable()) thread_.join();
}

void WriteBehind::wait() {
  if (thread_.joinable()) thread_.join();
  batch_.clear();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WriteBehind::write(std::vector<OutputTensor> tensors) {
  wait();
  batch_ = std::move(tensors);
  auto body = [this] {
    try {
      for (const OutputTensor& t : batch_) writer_.write(t.bytes);
    } catch (...) {
      error_ = std::current_exception();
    }
  };
  try {
    thread_ = std::thread(body);
  } catch (const std::system_error&) {
    body();  // no thread to be had: the same writes, in line
    wait();
  }
}

}  // namespace fp8q::checkpoint::pipeline
