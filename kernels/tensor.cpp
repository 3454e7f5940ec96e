// Tensor view helpers (see tensor.h).
#include "kernels/tensor.h"

#include <sstream>

#include "kernels/base/check.h"

namespace trainer {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::u16: return 2;
  }
  return 0;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

int64_t Tensor::size(int dim) const {
  int d = dim < 0 ? ndim + dim : dim;
  TRAINER_CHECK(d >= 0 && d < ndim, "dimension " + std::to_string(dim) + " of " + shape_str());
  return shape[d];
}

std::string Tensor::shape_str() const {
  std::ostringstream s;
  s << "(";
  for (int i = 0; i < ndim; ++i) s << (i ? ", " : "") << shape[i];
  s << ")";
  return s.str();
}

Tensor Tensor::view(std::initializer_list<int64_t> new_shape) const {
  Tensor t = make_tensor(data, dtype, device, new_shape);
  TRAINER_CHECK(t.numel() == numel(), "view " + t.shape_str() + " of " + shape_str());
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  TRAINER_CHECK(ndim >= 1 && 0 <= begin && begin <= end && end <= shape[0],
                "rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " + shape_str());
  Tensor t = *this;
  int64_t row = numel() / (shape[0] == 0 ? 1 : shape[0]);
  t.data = static_cast<char*>(data) + static_cast<size_t>(begin * row) * dtype_size(dtype);
  t.shape[0] = end - begin;
  return t;
}

Tensor Tensor::flat(int64_t begin, int64_t end) const {
  TRAINER_CHECK(0 <= begin && begin <= end && end <= numel(),
                "flat [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " + shape_str());
  Tensor t;
  t.data = static_cast<char*>(data) + static_cast<size_t>(begin) * dtype_size(dtype);
  t.dtype = dtype;
  t.device = device;
  t.ndim = 1;
  t.shape[0] = end - begin;
  return t;
}

Tensor make_tensor(void* data, DType dtype, Device device, std::initializer_list<int64_t> shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  TRAINER_CHECK(shape.size() <= 4, "tensor rank above 4");
  t.ndim = static_cast<int>(shape.size());
  int i = 0;
  for (int64_t s : shape) {
    TRAINER_CHECK(s >= 0, "negative dimension");
    t.shape[i++] = s;
  }
  return t;
}

}  // namespace trainer
