// MetricsLog implementation.
#include "app/engine/metrics.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <cmath>

#include "kernels/base/errors.h"
#include "kernels/base/output_target.h"
#include "parallel/trace_recorder.h"  // json_quote

namespace trainer {

MetricsLog::MetricsLog(const std::string& path, Reporting reporting) {
  if (reporting == Reporting::off || path.empty()) return;
  create_parent_folders(path, "log.metrics");
  // O_NONBLOCK: a FIFO that nobody reads fails at once (ENXIO) instead of blocking the run; a
  // FIFO with a reader, a terminal or /dev/null are fine and never replaced.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    const int err = errno;
    throw ConfigError("log.metrics: cannot open '" + path + "' for appending: " +
                      (err == ENXIO ? std::string("it is a FIFO that no process reads") : std::strerror(err)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || !(file_ = ::fdopen(fd, "a"))) {
    const int err = errno;
    ::close(fd);
    throw ConfigError("log.metrics: cannot open '" + path + "' for appending: " + std::strerror(err));
  }
  path_ = path;
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);  // every line was flushed and checked already
}

void MetricsLog::write(const std::vector<std::pair<std::string, double>>& fields) { write(fields, {}); }

void MetricsLog::write(const std::vector<std::pair<std::string, double>>& fields,
                       const std::vector<std::pair<std::string, std::string>>& texts) {
  if (!file_) return;
  std::string line = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    char num[64];
    double v = fields[i].second;
    if (std::isfinite(v)) std::snprintf(num, sizeof num, "%.9g", v);
    else std::snprintf(num, sizeof num, "null");
    line += (i ? ", \"" : "\"") + fields[i].first + "\": " + num;
  }
  for (size_t i = 0; i < texts.size(); ++i)
    line += (fields.empty() && i == 0 ? "\"" : ", \"") + texts[i].first + "\": " + json_quote(texts[i].second);
  line += "}\n";
  // A full disk stops the run rather than losing its metrics silently.
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw InputError("log.metrics: cannot write '" + path_ + "': " + std::strerror(errno));
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = long(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

int64_t peak_rss_bytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_maxrss) * 1024;
}

}  // namespace trainer
