// TraceSession (see trace_session.h).
#include "app/engine/trace_session.h"

#include <fmt/core.h>

#include <cstring>
#include <vector>

#include "kernels/base/atomic_file.h"

namespace trainer {

namespace {

constexpr int kLengthTag = 7100;
constexpr int kTextTag = 7101;

// Text travels as u16 elements (the host communicator moves typed buffers), padded to even.
std::vector<uint16_t> pack(const std::string& text) {
  std::vector<uint16_t> out((text.size() + 1) / 2, 0);
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

}  // namespace

TraceSession::TraceSession(const LogConfig& log, Comm& host_world)
    : path_(log.trace),
      first_(log.trace_steps.at(0)),
      last_(log.trace_steps.at(1)),
      world_(host_world),
      recorder_(host_world.rank()) {}

void TraceSession::name_rank(const GridCoords& c) {
  const int rank = world_.rank();
  recorder_.process_name(rank_label(rank, c), rank);
  recorder_.thread_name(TraceRecorder::kMainThread, "main");
}

void TraceSession::attach_device(Backend& backend) {
  if (backend.device() != Device::cuda) return;
  device_timer_ = backend.make_event_timer();
  recorder_.set_device_timer(device_timer_.get());
  recorder_.thread_name(TraceRecorder::kDeviceThread, "device (" + backend.device_name() + ")");
}

void TraceSession::begin_step(int64_t step) {
  recorder_.set_step(step);
  if (state_ == State::waiting && step >= first_) {
    world_.barrier();  // every rank's time zero is this barrier's exit
    recorder_.reset_origin();
    recorder_.set_enabled(true);
    state_ = State::recording;
  }
  if (state_ == State::recording) recorder_.anchor_device();
}

void TraceSession::after_step(int64_t step) {
  if (state_ != State::recording) return;
  recorder_.flush_device();
  if (step >= last_) finish();
}

void TraceSession::finish() {
  if (state_ == State::done) return;
  if (state_ == State::waiting) {
    if (world_.rank() == 0)
      fmt::print(stderr, "trace: note: log.trace_steps [{}, {}] never ran; {} not written\n", first_, last_, path_);
    state_ = State::done;
    return;
  }
  recorder_.flush_device();
  recorder_.set_enabled(false);
  state_ = State::done;
  write();
}

void TraceSession::write() {
  const std::string mine = recorder_.events_json();
  if (world_.rank() != 0) {
    int32_t length = int32_t(mine.size());
    std::vector<uint16_t> text = pack(mine);
    world_.send(make_tensor(&length, DType::i32, Device::cpu, {1}), 0, kLengthTag);
    if (!text.empty()) world_.send(make_tensor(text.data(), DType::u16, Device::cpu, {int64_t(text.size())}), 0, kTextTag);
    return;
  }
  std::string out = "{\"traceEvents\": [\n" + mine;
  for (int r = 1; r < world_.size(); ++r) {
    int32_t length = 0;
    world_.recv(make_tensor(&length, DType::i32, Device::cpu, {1}), r, kLengthTag);
    if (length == 0) continue;
    std::vector<uint16_t> text((size_t(length) + 1) / 2);
    world_.recv(make_tensor(text.data(), DType::u16, Device::cpu, {int64_t(text.size())}), r, kTextTag);
    out += ",\n";
    out.append(reinterpret_cast<const char*>(text.data()), size_t(length));
  }
  out += fmt::format("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {{\"trace_steps\": [{}, {}], \"world\": {}}}}}\n",
                     first_, last_, world_.size());
  write_file_atomically(path_, "log.trace", out);  // creates missing parent folders
  // stderr: bench --json keeps stdout to its one JSON object.
  fmt::print(stderr, "trace: wrote {} (steps {}-{}, {} ranks); open it in https://ui.perfetto.dev or chrome://tracing\n",
             path_, first_, last_, world_.size());
  std::fflush(stderr);
}

}  // namespace trainer
