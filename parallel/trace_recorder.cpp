// TraceRecorder (see trace_recorder.h).
#include "parallel/trace_recorder.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernels/backend.h"

namespace trainer {

namespace {

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// Microseconds with nanosecond digits: Perfetto reads fractional timestamps.
std::string json_time(double us) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return buf;
}

std::string json_args(const std::vector<TraceArg>& args) {
  std::string out = "{";
  for (size_t i = 0; i < args.size(); ++i) {
    out += (i ? ", " : "") + json_quote(args[i].key) + ": ";
    out += args[i].is_text ? json_quote(args[i].text) : json_number(args[i].number);
  }
  return out + "}";
}

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

TraceRecorder::TraceRecorder(int pid) : pid_(pid), origin_(std::chrono::steady_clock::now()) {}

void TraceRecorder::reset_origin() { origin_ = std::chrono::steady_clock::now(); }

double TraceRecorder::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
}

void TraceRecorder::add(std::string event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

void TraceRecorder::complete(const std::string& name, const char* category, int tid, double start_us,
                             double end_us, const std::vector<TraceArg>& args) {
  if (!enabled_) return;
  add("{\"name\": " + json_quote(name) + ", \"cat\": \"" + category + "\", \"ph\": \"X\", \"ts\": " +
      json_time(start_us) + ", \"dur\": " + json_time(end_us - start_us) + ", \"pid\": " + std::to_string(pid_) +
      ", \"tid\": " + std::to_string(tid) + ", \"args\": " + json_args(args) + "}");
}

void TraceRecorder::async_span(const std::string& name, const char* category, double start_us, double end_us,
                               const std::vector<TraceArg>& args) {
  if (!enabled_) return;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_async_id_++;
  }
  const std::string common = "{\"name\": " + json_quote(name) + ", \"cat\": \"" + category + "\", \"id\": \"" +
                             std::to_string(pid_) + "." + std::to_string(id) + "\", \"pid\": " +
                             std::to_string(pid_) + ", \"tid\": " + std::to_string(kMainThread);
  add(common + ", \"ph\": \"b\", \"ts\": " + json_time(start_us) + ", \"args\": " + json_args(args) + "}");
  add(common + ", \"ph\": \"e\", \"ts\": " + json_time(end_us) + "}");
}

void TraceRecorder::process_name(const std::string& name, int sort_index) {
  const std::string pid = std::to_string(pid_);
  add("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": 0, \"args\": {\"name\": " +
      json_quote(name) + "}}");
  add("{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": 0, \"args\": "
      "{\"sort_index\": " + std::to_string(sort_index) + "}}");
}

void TraceRecorder::thread_name(int tid, const std::string& name) {
  add("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid_) + ", \"tid\": " +
      std::to_string(tid) + ", \"args\": {\"name\": " + json_quote(name) + "}}");
}

std::string TraceRecorder::events_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (size_t i = 0; i < events_.size(); ++i) out += (i ? ",\n" : "") + events_[i];
  return out;
}

size_t TraceRecorder::event_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

bool TraceRecorder::records_device(const char* category) const {
  if (!enabled_ || !device_timer_ || anchor_mark_ < 0) return false;
  for (const char* c : {"compute", "optimizer", "eval"})
    if (std::strcmp(category, c) == 0) return true;
  return false;
}

void TraceRecorder::anchor_device() {
  if (!device_timer_) return;
  pending_.clear();
  device_timer_->reset();
  anchor_mark_ = device_timer_->record();
  anchor_us_ = now_us();
  ++anchor_count_;
}

int TraceRecorder::device_mark() { return device_timer_->record(); }

void TraceRecorder::device_span(const std::string& name, const char* category, int begin_mark, int end_mark,
                                const std::vector<TraceArg>& args) {
  pending_.push_back({name, category, begin_mark, end_mark, args});
}

void TraceRecorder::flush_device() {
  if (!device_timer_ || anchor_mark_ < 0) return;
  for (const PendingSpan& p : pending_) {
    const double begin = anchor_us_ + 1e6 * device_timer_->seconds(anchor_mark_, p.begin);
    const double end = anchor_us_ + 1e6 * device_timer_->seconds(anchor_mark_, p.end);
    complete(p.name, p.category, kDeviceThread, begin, end, p.args);
  }
  pending_.clear();
  device_timer_->reset();
  anchor_mark_ = -1;
}

TraceScope::TraceScope(TraceRecorder* recorder, std::string name, const char* category, std::vector<TraceArg> args)
    : recorder_(recorder && recorder->enabled() ? recorder : nullptr),
      name_(std::move(name)),
      category_(category),
      args_(std::move(args)) {
  if (!recorder_) return;
  start_us_ = recorder_->now_us();
  if (recorder_->records_device(category_)) {
    device_begin_ = recorder_->device_mark();
    device_anchor_ = recorder_->device_anchor_count();
  }
}

TraceScope::~TraceScope() noexcept(false) {
  if (!recorder_) return;
  const auto close = [&] {
    recorder_->complete(name_, category_, TraceRecorder::kMainThread, start_us_, recorder_->now_us(), args_);
    // The device span needs its start mark from this anchor: none when the anchor moved meanwhile.
    if (device_begin_ >= 0 && recorder_->records_device(category_) &&
        device_anchor_ == recorder_->device_anchor_count())
      recorder_->device_span(name_, category_, device_begin_, recorder_->device_mark(), args_);
  };
  guard_.close(close, "trace: a scope's closing mark");
}

}  // namespace trainer
