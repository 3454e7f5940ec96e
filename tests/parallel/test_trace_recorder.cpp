// TraceRecorder's device spans (parallel/trace_recorder.h) with a scripted EventTimer standing
// in for CUDA events: device-category scopes become spans on the device track placed from the
// anchor, other categories and a disabled recorder mark nothing, a scope that outlives its
// anchor leaves no device span, and flushing waits only on the marks it converts.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "parallel/trace_recorder.h"

using namespace trainer;

namespace {

// Mark i completes at device time times[i] seconds (the test scripts them); counts waits.
class ScriptedTimer final : public EventTimer {
 public:
  explicit ScriptedTimer(std::vector<double> times) : times_(std::move(times)) {}
  int record() override {
    REQUIRE(used_ < times_.size());
    return int(used_++);
  }
  double seconds(int from, int to) override {
    ++waits;
    REQUIRE(size_t(from) < used_);
    REQUIRE(size_t(to) < used_);
    return times_[size_t(to)] - times_[size_t(from)];
  }
  void reset() override { used_ = 0; }
  size_t used() const { return used_; }
  int waits = 0;

 private:
  std::vector<double> times_;
  size_t used_ = 0;
};

// The one event on `tid` whose name is `name` (the whole JSON object), "" if none.
std::string event_on(const std::string& json, const std::string& name, int tid) {
  const std::string key = "{\"name\": \"" + name + "\"";
  const std::string on = "\"tid\": " + std::to_string(tid) + ",";
  std::string found;
  for (size_t at = json.find(key); at != std::string::npos; at = json.find(key, at + 1)) {
    const std::string event = json.substr(at, json.find('}', json.find("\"args\"", at)) + 1 - at);
    if (event.find(on) != std::string::npos) {
      CHECK_MESSAGE(found.empty(), "two events " << name << " on tid " << tid);
      found = event;
    }
  }
  return found;
}

double field(const std::string& event, const std::string& key) {
  const size_t at = event.find("\"" + key + "\": ");
  REQUIRE(at != std::string::npos);
  return std::stod(event.substr(at + key.size() + 4));
}

}  // namespace

TEST_CASE("trace device spans: compute scopes are placed on the device track from the anchor") {
  // Marks: anchor at device 10 s, forward 10.001..10.004, backward 10.004..10.010.
  ScriptedTimer timer({10.0, 10.001, 10.004, 10.004, 10.010});
  TraceRecorder rec(0);
  rec.set_device_timer(&timer);
  rec.set_enabled(true);
  rec.anchor_device();
  const double anchor_us = rec.now_us();
  {
    TraceScope forward(&rec, "forward", "compute", {TraceArg::num("micro_batch", 0)});
  }
  {
    TraceScope data(&rec, "data", "data");  // host work: no device marks
    TraceScope comm(&rec, "all_reduce", "comm");
  }
  {
    TraceScope backward(&rec, "backward", "compute");
  }
  CHECK(timer.used() == 5);
  CHECK(timer.waits == 0);  // recording never waits on the device
  rec.flush_device();
  CHECK(timer.waits == 4);
  const std::string json = rec.events_json();
  const std::string fwd = event_on(json, "forward", TraceRecorder::kDeviceThread);
  const std::string bwd = event_on(json, "backward", TraceRecorder::kDeviceThread);
  REQUIRE(!fwd.empty());
  REQUIRE(!bwd.empty());
  // The recorder read its anchor's host time just before anchor_us was read here; the device
  // offsets from the anchor are exact.
  CHECK(field(fwd, "ts") <= anchor_us + 1000.0);
  CHECK(field(fwd, "ts") > anchor_us + 1000.0 - 1e5);
  CHECK(field(fwd, "dur") == doctest::Approx(3000.0));
  CHECK(field(bwd, "ts") - field(fwd, "ts") == doctest::Approx(3000.0));
  CHECK(field(bwd, "dur") == doctest::Approx(6000.0));
  CHECK(fwd.find("\"micro_batch\": 0") != std::string::npos);
  CHECK(event_on(json, "forward", TraceRecorder::kMainThread) != "");
  CHECK(event_on(json, "data", TraceRecorder::kDeviceThread).empty());
  CHECK(event_on(json, "all_reduce", TraceRecorder::kDeviceThread).empty());
}

TEST_CASE("trace device spans: nothing without an anchor, while disabled, or across an anchor") {
  ScriptedTimer timer({0.0, 1.0, 2.0, 3.0, 4.0, 5.0});
  TraceRecorder rec(3);
  rec.set_device_timer(&timer);
  rec.set_enabled(true);
  {
    TraceScope before_anchor(&rec, "forward", "compute");
  }
  CHECK(timer.used() == 0);
  rec.set_enabled(false);
  rec.anchor_device();
  {
    TraceScope disabled(&rec, "forward", "compute");
  }
  CHECK(timer.used() == 1);  // the anchor only
  rec.set_enabled(true);
  {
    TraceScope spans_anchor(&rec, "optimizer", "optimizer");
    rec.anchor_device();  // a new step's anchor: the open scope's first mark is from the old one
  }
  rec.flush_device();
  const std::string json = rec.events_json();
  CHECK(event_on(json, "optimizer", TraceRecorder::kDeviceThread).empty());
  CHECK(!event_on(json, "optimizer", TraceRecorder::kMainThread).empty());
  CHECK(event_on(json, "forward", TraceRecorder::kDeviceThread).empty());
}

TEST_CASE("trace device spans: a recorder without a device timer records host spans only") {
  TraceRecorder rec(0);
  rec.set_enabled(true);
  rec.anchor_device();
  {
    TraceScope forward(&rec, "forward", "compute");
  }
  rec.flush_device();
  const std::string json = rec.events_json();
  CHECK(!event_on(json, "forward", TraceRecorder::kMainThread).empty());
  CHECK(event_on(json, "forward", TraceRecorder::kDeviceThread).empty());
}

// A device timer whose marks fail after the first `ok` (as CUDA events report an earlier
// kernel's sticky error).
class FailingTimer final : public EventTimer {
 public:
  explicit FailingTimer(int ok) : ok_(ok) {}
  int record() override {
    if (used_ >= ok_) throw std::runtime_error("sticky device error");
    return used_++;
  }
  double seconds(int, int) override { return 0; }
  void reset() override { used_ = 0; }

 private:
  int ok_;
  int used_ = 0;
};

TEST_CASE("trace device spans: a failing closing mark propagates, but never over the scope's own error") {
  FailingTimer timer(1);  // the scope's opening mark works, its closing one fails
  TraceRecorder rec(0);
  rec.set_device_timer(&timer);
  rec.set_enabled(true);
  rec.anchor_device();
  // The error that unwinds through the scope is the one the caller sees (a second one would
  // end the process with std::terminate).
  timer.reset();
  const auto body_fails = [&] {
    TraceScope forward(&rec, "forward", "compute");
    throw std::invalid_argument("the step's own error");
  };
  CHECK_THROWS_WITH_AS(body_fails(), "the step's own error", std::invalid_argument);
  // Without another error, the mark's failure is the scope's.
  timer.reset();
  const auto body_ok = [&] { TraceScope forward(&rec, "forward", "compute"); };
  CHECK_THROWS_WITH_AS(body_ok(), "sticky device error", std::runtime_error);
}
