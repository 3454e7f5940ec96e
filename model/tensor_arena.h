// TensorArena: carves many tensors out of one allocation. Used in two passes: plan (no
// memory, only sizes) and then carve the same sequence out of a Buffer of planned size.
// Every tensor starts on a 64-byte boundary.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "kernels/tensor.h"

namespace trainer {

class TensorArena {
 public:
  // base == nullptr: planning pass.
  TensorArena(void* base, Device device) : base_(static_cast<char*>(base)), device_(device) {}

  Tensor take(DType dtype, std::initializer_list<int64_t> shape) {
    offset_ = (offset_ + 63) / 64 * 64;
    Tensor t = make_tensor(nullptr, dtype, device_, shape);
    if (base_) t.data = base_ + offset_;
    offset_ += t.bytes();
    return t;
  }
  size_t bytes() const { return (offset_ + 63) / 64 * 64; }

 private:
  char* base_;
  Device device_;
  size_t offset_ = 0;
};

}  // namespace trainer
