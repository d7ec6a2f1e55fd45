// Internal: a fixed-size buffer of trivial values aligned to a cache line, for packed GEMM
// operands (a 32-byte vector load from a 64-byte aligned row never splits a cache line).
// Not installed.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace fp8q::detail {

template <class T>
class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t n) : data_(static_cast<T*>(::operator new[](n * sizeof(T), kAlign))), size_(n) {}
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::align_val_t kAlign{64};
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, kAlign); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t size_;
};

}  // namespace fp8q::detail
