// The CPU backend: fp32, OpenMP for element-wise and reduction ops, OpenBLAS sgemm for
// matrix products. Deterministic for a fixed thread count. Sets flush-to-zero and
// denormals-are-zero on construction (denormals slow this CPU's float math several times).
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace trainer {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace trainer
