// Clocks for measuring intervals and the process's CPU time (timings, never results).
#pragma once

namespace trainer {

// Seconds on a monotonic clock (for intervals).
double monotonic_seconds();
// CPU time of the whole process (every thread, user and system) so far.
double process_cpu_seconds();

}  // namespace trainer
