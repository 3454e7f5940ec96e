// check_weights_finite (see weights_finite.h).
#include "model/weights_finite.h"

#include <algorithm>
#include <cmath>

#include "kernels/base/errors.h"

namespace trainer {

void check_weights_finite(const std::vector<std::pair<std::string, int64_t>>& tensors, const WeightRead& read,
                          const std::string& source) {
  constexpr int64_t kChunk = int64_t(1) << 18;  // floats per read: 1 MiB
  std::vector<float> chunk;
  for (const auto& [name, n] : tensors) {
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t end = std::min(n, begin + kChunk);
      chunk.resize(size_t(end - begin));
      read(name, {begin, end}, chunk.data());
      for (size_t i = 0; i < chunk.size(); ++i)
        if (!std::isfinite(chunk[i]))
          throw InputError(source + ": tensor " + name + " element " + std::to_string(begin + int64_t(i)) + " is " +
                           (std::isnan(chunk[i]) ? "nan" : "inf") +
                           "; model.init_from needs finite weights (valid: every value a finite fp32 number)");
    }
  }
}

}  // namespace trainer
