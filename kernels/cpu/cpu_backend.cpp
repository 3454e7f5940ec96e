// Placeholder until the CPU backend lands.
#include "kernels/cpu/cpu_backend.h"

#include <stdexcept>

namespace trainer {

std::unique_ptr<Backend> make_cpu_backend() { throw std::logic_error("CPU backend not built yet"); }

}  // namespace trainer
