// Metrics: the progress line on stdout and the JSON-lines metrics file, written by rank 0 only.
// Field names are an interface (README "Metrics"): train records carry step, loss, lr,
// grad_norm, tokens_per_s, mfu, elapsed_s (and step_s, the mean time of the interval's
// steps alone); evaluation records carry step, val_loss and eval_s; checkpoint and sample
// records carry step and checkpoint_s or sample_s; bad-step records carry step, event
// (nonfinite, spike), action and reason (app/engine/step_guard.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "kernels/base/clock.h"
#include "kernels/base/reporting.h"

namespace trainer {

class MetricsLog {
 public:
  // An empty path writes no file; Reporting::off (ranks other than 0) writes nothing. A path
  // that cannot be opened for appending (a directory, a FIFO without a reader) is a ConfigError.
  MetricsLog(const std::string& path, Reporting reporting);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // One JSON object per line; values are numbers (NaN/inf become null). A failed write (full
  // disk) is an InputError naming the file.
  void write(const std::vector<std::pair<std::string, double>>& fields);
  // The same with text fields after the numbers (JSON strings, escaped): event records.
  void write(const std::vector<std::pair<std::string, double>>& fields,
             const std::vector<std::pair<std::string, std::string>>& texts);

 private:
  FILE* file_ = nullptr;
  std::string path_;
};

std::string format_duration(double seconds);
// The process's peak resident set size in bytes.
int64_t peak_rss_bytes();

}  // namespace trainer
