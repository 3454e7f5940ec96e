// Learning-rate schedules: constant, linear, cosine and warm-up-stable-decay, each after an
// optional linear warm-up (llm.c's form: step s < warmup gets lr * (s + 1) / warmup).
// A pure function of the step, so a resumed run continues the same curve.
#pragma once

#include <cstdint>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class LrKind : uint8_t { constant, linear, cosine, wsd };
// The recipe's spelling of each kind (train.lr_schedule.kind).
inline constexpr EnumName<LrKind> kLrKindNames[] = {{LrKind::constant, "constant"},
                                                    {LrKind::linear, "linear"},
                                                    {LrKind::cosine, "cosine"},
                                                    {LrKind::wsd, "wsd"}};
inline const char* lr_kind_name(LrKind kind) { return enum_name(kLrKindNames, kind); }

struct LrSchedule {
  LrKind kind = LrKind::cosine;
  double max_lr = 6e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;
  double decay_fraction = 0.2;  // wsd: the final share of steps spent decaying
};

// Learning rate for 0-based step `step`.
double lr_at(const LrSchedule& schedule, int64_t step);

}  // namespace trainer
