// Streams, events and graphs of the emulated CUDA runtime (cuda_emu_stream.h). Each stream is a
// queue: work issued to it runs once everything issued there before it has finished, at once
// when nothing is pending (so a single stream behaves as if synchronous). Work can wait for an
// event another stream records (cudaStreamWaitEvent) or for peers (the emulated NCCL's
// collectives), and then the stream's later work waits behind it while the host goes on, as
// on a GPU; queued work runs when the host blocks (a stream or event synchronize, a copy to the
// host, a free) or issues more. While a stream is captured its work is recorded with the
// arguments it had at capture and runs at every launch of the graph. What the hardware refuses
// while a thread captures (ThreadLocal or Global mode) invalidates the capture and fails the
// call; cudaStreamEndCapture then returns cudaErrorStreamCaptureInvalidated and no graph.
// Queues are run by the thread that issues (the main thread); cudaEventQuery only reads.
// TRAINER_EMU_ORDER=deferred changes the order (an adversary for cross-stream dependencies):
// nothing runs at its issue, only when the host blocks, and then the streams created last run
// first. A collective issued on its own stream without waiting for the compute stream's event
// then reads its buffer before the kernels that write it have run, where eager order (the
// default: work runs at its issue when its stream is idle) would hide the missing wait.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/kernels/cuda_emu/cuda_emu_stream.h"

struct CUstream_st {
  enum class Capture { none, active, invalidated } capture = Capture::none;
  bool destroyed = false;  // cudaStreamDestroy with work pending: freed once that has run
  std::vector<std::function<void()>> nodes;  // recorded while captured
  std::deque<std::function<bool()>> queue;   // issued, not finished; a step returns true once done
};
// One cudaEventRecord: done once its stream reaches it. Shared by the waits that name it, so an
// event destroyed or recorded again after cudaStreamWaitEvent leaves those waits as they were,
// as CUDA specifies.
struct EventRecord {
  std::atomic<bool> done{false};
  std::chrono::steady_clock::time_point at;  // when the stream reached it
};
struct CUevent_st {
  std::shared_ptr<EventRecord> last;  // the record issued last; null: never recorded
  bool timing = true;                 // false: cudaEventDisableTiming
};
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};

namespace emu {
namespace {

// How long every queue may stand still, work pending, before the emulator calls it a deadlock
// (NcclComm's watchdog, at its own timeout, usually reports first).
constexpr double kStallSeconds = 900;

thread_local CUstream_st t_legacy;  // the legacy stream (nullptr)
thread_local std::vector<CUstream_st*> t_streams{&t_legacy};
// The capture this thread has in progress (what it may not do meanwhile), or null.
thread_local CUstream_st* t_capture = nullptr;

CUstream_st* resolve(cudaStream_t stream) { return stream ? stream : &t_legacy; }

enum class Order { eager, deferred };
Order order() {
  static const Order o = [] {
    const char* v = std::getenv("TRAINER_EMU_ORDER");
    const std::string s = v ? v : "eager";
    if (s != "eager" && s != "deferred")
      throw std::runtime_error("TRAINER_EMU_ORDER=" + s + ": valid: eager, deferred");
    return s == "deferred" ? Order::deferred : Order::eager;
  }();
  return o;
}


void invalidate_capture() {
  t_capture->capture = CUstream_st::Capture::invalidated;
  t_capture->nodes.clear();
}

// Work that graphs here do not model, issued to a captured stream: the capture is invalidated
// and the call fails with `error`. True where that happened.
bool refused_in_capture(cudaStream_t stream, cudaError_t error) {
  if (!stream || stream->capture == CUstream_st::Capture::none) return false;
  if (stream->capture == CUstream_st::Capture::active) {
    stream->capture = CUstream_st::Capture::invalidated;
    stream->nodes.clear();
  }
  fail(error);
  return true;
}

// One pass over every queue, each run from its front while its steps finish; true if any did.
// Streams in creation order, or newest first in deferred order.
bool progress_once() {
  bool moved = false;
  const bool reverse = order() == Order::deferred;
  for (size_t n = 0; n < t_streams.size(); ++n) {
    const size_t i = reverse ? t_streams.size() - 1 - n : n;
    CUstream_st* s = t_streams[i];
    while (!s->queue.empty()) {
      std::function<bool()> step = std::move(s->queue.front());
      s->queue.pop_front();
      if (!step()) {
        s->queue.push_front(std::move(step));
        break;
      }
      moved = true;
    }
    if (s->destroyed && s->queue.empty()) {
      t_streams.erase(t_streams.begin() + std::ptrdiff_t(i));
      delete s;
      --n;  // the same n next names the stream after it (before it, newest first)
    }
  }
  return moved;
}

void progress_until(const std::function<bool()>& done, const char* what) {
  auto last_move = std::chrono::steady_clock::now();
  while (!done()) {
    if (progress_once()) {
      last_move = std::chrono::steady_clock::now();
      continue;
    }
    if (done()) return;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last_move).count() > kStallSeconds)
      throw std::runtime_error(std::string("cuda emulator: ") + what + ": no stream has moved for " +
                               std::to_string(int(kStallSeconds)) + " s (a deadlock)");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

cudaError_t issue(cudaStream_t stream, std::function<bool()> step) {
  CUstream_st* s = resolve(stream);
  if (!stream && t_capture) {
    invalidate_capture();
    return fail(cudaErrorStreamCaptureImplicit);
  }
  if (order() == Order::eager && s->queue.empty() && step()) return cudaSuccess;
  s->queue.push_back(std::move(step));
  return cudaSuccess;
}

}  // namespace

cudaError_t submit(cudaStream_t stream, std::function<void()> work) {
  if (stream && stream->capture == CUstream_st::Capture::active) {
    stream->nodes.push_back(std::move(work));
    return cudaSuccess;
  }
  if (stream && stream->capture == CUstream_st::Capture::invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  return issue(stream, [work = std::move(work)] {
    work();
    return true;
  });
}

cudaError_t submit_until_done(cudaStream_t stream, std::function<bool()> step) {
  if (refused_in_capture(stream, cudaErrorStreamCaptureUnsupported)) return cudaErrorStreamCaptureUnsupported;
  return issue(stream, std::move(step));
}

void drain(cudaStream_t stream) {
  CUstream_st* s = resolve(stream);
  progress_until([s] { return s->queue.empty(); }, "waiting for a stream");
}

void drain_all() {
  progress_until([] {
    for (CUstream_st* s : t_streams)
      if (!s->queue.empty()) return false;
    return true;
  }, "waiting for the device");
}

bool refused_while_capturing() {
  if (!t_capture) return false;
  invalidate_capture();
  set_last_error(cudaErrorStreamCaptureUnsupported);
  return true;
}

}  // namespace emu

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  *stream = new CUstream_st;
  emu::t_streams.push_back(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int) {
  return cudaStreamCreateWithFlags(stream, flags);
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
// Returns at once, as CUDA's: work still queued runs later, and then the stream is freed.
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream || stream->destroyed) return emu::fail(cudaErrorInvalidResourceHandle);
  if (emu::t_capture == stream) emu::t_capture = nullptr;
  if (!stream->queue.empty()) {
    stream->destroyed = true;
    return cudaSuccess;
  }
  emu::t_streams.erase(std::remove(emu::t_streams.begin(), emu::t_streams.end(), stream), emu::t_streams.end());
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  emu::drain(stream);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  emu::drain_all();
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (!event) return emu::fail(cudaErrorInvalidResourceHandle);
  // Cross-stream dependencies in graphs: not modelled.
  if (emu::refused_in_capture(stream, cudaErrorNotSupported)) return cudaErrorNotSupported;
  std::shared_ptr<EventRecord> awaited = event->last;  // the record issued last, as CUDA takes it
  if (!awaited) return cudaSuccess;
  return emu::issue(stream, [awaited] { return awaited->done.load(); });
}

// A host function runs on the stream in its turn, never at the call: CUDA runs it on a thread
// of its own, so the caller goes on while it runs (here it runs when the host next blocks).
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (emu::refused_in_capture(stream, cudaErrorNotSupported)) return cudaErrorNotSupported;  // host nodes
  emu::resolve(stream)->queue.push_back([fn, user_data] {
    fn(user_data);
    return true;
  });
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (!stream) return emu::fail(cudaErrorStreamCaptureUnsupported);  // the legacy stream is never captured
  if (mode == cudaStreamCaptureModeRelaxed) return emu::fail(cudaErrorNotSupported);  // not modelled
  if (stream->capture != CUstream_st::Capture::none || emu::t_capture) return emu::fail(cudaErrorIllegalState);
  emu::drain(stream);  // what was issued before runs before the capture's work (never inside it)
  stream->capture = CUstream_st::Capture::active;
  stream->nodes.clear();
  emu::t_capture = stream;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  *graph = nullptr;
  if (!stream || stream->capture == CUstream_st::Capture::none) return emu::fail(cudaErrorIllegalState);
  const bool invalidated = stream->capture == CUstream_st::Capture::invalidated;
  stream->capture = CUstream_st::Capture::none;
  if (emu::t_capture == stream) emu::t_capture = nullptr;
  if (invalidated) return emu::fail(cudaErrorStreamCaptureInvalidated);
  *graph = new CUgraph_st{std::exchange(stream->nodes, {})};
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (!stream) {
    *status = cudaStreamCaptureStatusNone;
    if (emu::t_capture) return emu::fail(cudaErrorStreamCaptureImplicit);
    return cudaSuccess;
  }
  switch (stream->capture) {
    case CUstream_st::Capture::none: *status = cudaStreamCaptureStatusNone; break;
    case CUstream_st::Capture::active: *status = cudaStreamCaptureStatusActive; break;
    case CUstream_st::Capture::invalidated: *status = cudaStreamCaptureStatusInvalidated; break;
  }
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph) return emu::fail(cudaErrorInvalidValue);
  if (nodes) return emu::fail(cudaErrorNotSupported);  // the nodes themselves are not modelled
  *count = graph->nodes.size();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return emu::fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return emu::fail(cudaErrorInvalidValue);
  return emu::submit(stream, [nodes = exec->nodes] {
    for (const std::function<void()>& node : nodes) node();
  });
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  *event = new CUevent_st;
  (*event)->timing = (flags & cudaEventDisableTiming) == 0;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event) return emu::fail(cudaErrorInvalidResourceHandle);
  // In a graph an event record joins streams into the capture, and querying it is illegal:
  // not modelled, so refused (stricter than CUDA; our code records none while capturing).
  if (emu::refused_in_capture(stream, cudaErrorNotSupported)) return cudaErrorNotSupported;
  auto record = std::make_shared<EventRecord>();
  const cudaError_t issued = emu::submit(stream, [record] {
    record->at = std::chrono::steady_clock::now();
    record->done.store(true);
  });
  if (issued == cudaSuccess) event->last = record;
  return issued;
}
// Reads only: NcclComm's monitor thread asks from beside the thread that runs the queues.
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event) return cudaErrorInvalidResourceHandle;
  return !event->last || event->last->done.load() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event) return emu::fail(cudaErrorInvalidResourceHandle);
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (std::shared_ptr<EventRecord> record = event->last)
    emu::progress_until([record] { return record->done.load(); }, "cudaEventSynchronize");
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->last || !end->last || !start->timing || !end->timing)
    return emu::fail(cudaErrorInvalidResourceHandle);
  if (!start->last->done.load() || !end->last->done.load()) return emu::fail(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(end->last->at - start->last->at).count();
  return cudaSuccess;
}

}  // extern "C"
