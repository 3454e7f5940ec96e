// Learning-rate schedules (see lr_schedule.h).
#include "model/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace trainer {

double lr_at(const LrSchedule& s, int64_t step) {
  const double min_lr = s.max_lr * s.min_lr_ratio;
  if (step < s.warmup_steps) return s.max_lr * double(step + 1) / double(s.warmup_steps);
  const int64_t span = std::max<int64_t>(1, s.total_steps - s.warmup_steps);
  const double progress = std::clamp(double(step - s.warmup_steps) / double(span), 0.0, 1.0);
  switch (s.kind) {
    case LrKind::constant: return s.max_lr;
    case LrKind::linear: return s.max_lr + (min_lr - s.max_lr) * progress;
    case LrKind::cosine: return min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (s.max_lr - min_lr);
    case LrKind::wsd: {
      const double decay_start = 1.0 - s.decay_fraction;
      if (progress <= decay_start) return s.max_lr;
      double d = (progress - decay_start) / s.decay_fraction;
      return s.max_lr + (min_lr - s.max_lr) * d;
    }
  }
  return s.max_lr;
}

}  // namespace trainer
