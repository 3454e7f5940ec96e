// TraceRecorder: this rank's events of a timeline trace in Chrome's trace-event format (what
// Perfetto and chrome://tracing open): complete spans ("ph": "X") on a thread track, async spans
// ("b"/"e" with an id) for operations that overlap others (a bucket's all-reduce in flight
// during backward), and metadata naming the process (the rank) and its threads.
// Invariants: times are microseconds since the origin (reset_origin(), called by every rank
// right after one barrier, so ranks' tracks line up to a barrier's skew); X spans of one thread
// nest, because each is recorded when it ends, by a scope that began inside its parent's
// scope; nothing is recorded while disabled (the cost is then one branch per call site).
// Thread-safe (a mutex), though the program records from its main thread only.
// Device spans (a GPU backend, set_device_timer): every TraceScope of a device category
// (compute, optimizer, eval) also marks the backend's queue where it begins and ends; once the
// step's work is done, flush_device() turns the marks into spans on the device track
// (kDeviceThread), placed by the anchor mark anchor_device() set at host time t: a device time
// is t + (mark - anchor). The anchor is set at a step boundary, where the queue is idle after
// the previous step's host read, so the mark completes at once and the two clocks agree to
// the launch latency. The marks never synchronise the host; only flush_device() waits.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/base/unwind_guard.h"

namespace trainer {

class EventTimer;  // kernels/backend.h

struct TraceArg {
  std::string key;
  std::string text;     // used when is_text
  double number = 0;
  bool is_text = false;
  static TraceArg num(std::string k, double v) { return {std::move(k), "", v, false}; }
  static TraceArg str(std::string k, std::string v) { return {std::move(k), std::move(v), 0, true}; }
};

class TraceRecorder {
 public:
  static constexpr int kMainThread = 0;
  static constexpr int kDeviceThread = 1;

  explicit TraceRecorder(int pid);

  bool enabled() const { return enabled_; }
  void set_enabled(bool on) { enabled_ = on; }
  // Time zero is now.
  void reset_origin();
  double now_us() const;
  // The training step being recorded (names buckets per step in comm spans).
  int64_t step() const { return step_; }
  void set_step(int64_t step) { step_ = step; }

  void complete(const std::string& name, const char* category, int tid, double start_us, double end_us,
                const std::vector<TraceArg>& args = {});
  void async_span(const std::string& name, const char* category, double start_us, double end_us,
                  const std::vector<TraceArg>& args = {});
  void process_name(const std::string& name, int sort_index);
  void thread_name(int tid, const std::string& name);

  // Device spans (see the header comment); timer null: none. The timer outlives its use here.
  void set_device_timer(EventTimer* timer) { device_timer_ = timer; }
  // Whether a scope of `category` records a device span now.
  bool records_device(const char* category) const;
  // Marks the idle queue at host time now (a step boundary); earlier unflushed spans are dropped.
  void anchor_device();
  // Counts anchor_device() calls: marks of an older anchor are not comparable with new ones.
  uint64_t device_anchor_count() const { return anchor_count_; }
  // A mark on the device queue, for a span recorded later with device_span.
  int device_mark();
  void device_span(const std::string& name, const char* category, int begin_mark, int end_mark,
                   const std::vector<TraceArg>& args);
  // Waits for the pending marks and records their spans on kDeviceThread.
  void flush_device();

  // The events recorded so far, as JSON objects separated by ",\n" (no brackets).
  std::string events_json() const;
  size_t event_count() const;

 private:
  void add(std::string event);

  struct PendingSpan {
    std::string name;
    const char* category;
    int begin, end;
    std::vector<TraceArg> args;
  };

  int pid_;
  bool enabled_ = false;
  EventTimer* device_timer_ = nullptr;
  int anchor_mark_ = -1;  // -1: not anchored since the last flush
  double anchor_us_ = 0;
  uint64_t anchor_count_ = 0;
  std::vector<PendingSpan> pending_;
  int64_t step_ = 0;
  uint64_t next_async_id_ = 1;
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
};

// `text` as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_quote(const std::string& text);

// A complete span on the main thread from construction to destruction (when enabled at
// construction); args may be added while it runs.
class TraceScope {
 public:
  TraceScope(TraceRecorder* recorder, std::string name, const char* category, std::vector<TraceArg> args = {});
  // A failing device mark (a sticky CUDA error) propagates, except while another error unwinds
  // through the scope: then it is reported on stderr, as a second exception would end the process.
  ~TraceScope() noexcept(false);
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  void add(TraceArg arg) { args_.push_back(std::move(arg)); }

 private:
  TraceRecorder* recorder_;  // null when tracing is off or disabled
  std::string name_;
  const char* category_;
  std::vector<TraceArg> args_;
  double start_us_ = 0;
  int device_begin_ = -1;  // the device mark at construction, -1 for none
  uint64_t device_anchor_ = 0;  // the anchor that mark belongs to
  UnwindGuard guard_;  // made with the scope: see its closing mark
};

}  // namespace trainer
