// LayerTensors' fused view (see block_code.h).
#include "model/block_code.h"

#include "kernels/base/check.h"

namespace trainer {

Tensor LayerTensors::fused(const char* first_name, const char* last_name, int64_t rows) const {
  const Tensor first = (*this)(first_name), last = (*this)(last_name);
  const int64_t cols = first.size(-1);
  TRAINER_CHECK(static_cast<const char*>(last.data) + last.bytes() ==
                    static_cast<const char*>(first.data) + size_t(rows * cols) * dtype_size(first.dtype),
                "fused projection: its matrices are not adjacent in the buffer");
  return make_tensor(first.data, first.dtype, first.device, {rows, cols});
}

}  // namespace trainer
