// Rotary frequencies (see rope_freq.h).
#include "model/rope_freq.h"

#include <cmath>

namespace trainer {

std::vector<float> rope_inv_freq(const GptConfig& c) {
  const int D = c.head_dim();
  std::vector<float> f(size_t(D / 2));
  for (int i = 0; i < D / 2; ++i) f[size_t(i)] = 1.0f / std::pow(c.rope_theta, float(2 * i) / float(D));
  if (!c.rope_scaling.enabled()) return f;
  const RopeScaling& s = c.rope_scaling;
  const float old_context = float(s.original_context);
  const float low_freq_wavelen = old_context / s.low_freq_factor;
  const float high_freq_wavelen = old_context / s.high_freq_factor;
  constexpr float kPi = 3.14159265358979323846f;
  for (float& inv : f) {
    const float wavelen = 2.0f * kPi / inv;
    if (wavelen > low_freq_wavelen) {
      inv = inv / s.factor;
    } else if (wavelen >= high_freq_wavelen) {
      const float smooth = (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      inv = (1.0f - smooth) * inv / s.factor + smooth * inv;
    }
  }
  return f;
}

}  // namespace trainer
