// The emulator's scheduler (fibers: ucontext) and the part of the CUDA runtime API that our
// kernels' host code calls, on host memory (see cuda_emu.h for the model). One launch at a
// time per OS thread: the launch in progress is this thread's `t_launch`, which is how the
// device built-ins (threadIdx, __syncthreads, ...) find their thread. Nothing here is linked
// into the trainer: only the emulator test uses it, in place of libcudart.
// Switching between fibers is _setjmp/_longjmp (no system call); ucontext only starts each
// fiber on its stack. glibc's fortified longjmp refuses to jump between stacks.
#undef _FORTIFY_SOURCE
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/kernels/cuda_emu/cuda_emu.h"
#include "tests/kernels/cuda_emu/cuda_emu_counts.h"
#include "tests/kernels/cuda_emu/cuda_emu_stream.h"

namespace emu {
namespace {

constexpr size_t kStackBytes = 128 * 1024;
constexpr size_t kDefaultSharedLimit = 48 * 1024;
constexpr size_t kOptInSharedLimit = 227 * 1024;  // sm_90 (H100, H200): 232448 bytes

// A cp.async copy, done when a wait covers its group (cuda_emu.h: async_copy).
struct AsyncCopy {
  void* dst;
  const void* src;
  int bytes;
  bool valid;
};

struct Fiber {
  ucontext_t start{};  // enters fiber_main on the fiber's stack, once
  jmp_buf resume;      // where a fiber that yielded goes on
  bool started = false;
  char* stack = nullptr;
  uint3 thread{};
  int linear = 0;
  bool done = false;
  const char* waits_at = nullptr;  // what a waiting fiber waits for (deadlock reports)
  std::vector<AsyncCopy> open_group;              // issued, not committed
  std::vector<std::vector<AsyncCopy>> committed;  // oldest first
};

struct Warp {
  uint64_t round = 0;
  unsigned arrived = 0;
  unsigned mask = 0;
  uint64_t slots[2][32] = {};
};

struct Launch {
  LaunchConfig config;
  void (*thread)(void*) = nullptr;
  void* arg = nullptr;
  uint3 block{};
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  int threads = 0;
  int live = 0;
  Fiber* current = nullptr;
  jmp_buf scheduler;
  ucontext_t scheduler_context{};
  int barrier_arrived = 0;
  uint64_t barrier_round = 0;
  uint64_t events = 0;  // arrivals, releases and exits: a pass without one is a deadlock
  std::string error;
  std::unique_ptr<unsigned char[]> shared_storage;
  unsigned char* shared = nullptr;
  // Static __shared__ arrays (emu_translate.py: block_shared), by their declaration's tag:
  // refilled with NaN bytes at every block's start, as nothing carries over between blocks.
  std::vector<std::pair<const void*, std::vector<unsigned char>>> static_shared;
};

thread_local Launch* t_launch = nullptr;
thread_local cudaError_t t_last_error = cudaSuccess;
thread_local bool t_reverse = false;
thread_local bool t_ran_since_read = false;  // a launch ran since the host last read memory

// A fiber's stack with an inaccessible page below it, so an overflow faults instead of
// corrupting the heap; kept from launch to launch.
class FiberStack {
 public:
  FiberStack() {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    bytes_ = kStackBytes + page;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED || mprotect(base_, page, PROT_NONE) != 0)
      throw std::runtime_error("cuda emulator: cannot map a fiber stack");
    top_ = static_cast<char*>(base_) + page;
  }
  ~FiberStack() { munmap(base_, bytes_); }
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;
  char* memory() const { return top_; }

 private:
  void* base_ = nullptr;
  char* top_ = nullptr;
  size_t bytes_ = 0;
};
thread_local std::vector<std::unique_ptr<FiberStack>> t_stacks;

// The per-kernel opt-in limit set by cudaFuncSetAttribute(MaxDynamicSharedMemorySize).
std::unordered_map<const void*, size_t>& shared_opt_in() {
  static std::unordered_map<const void*, size_t> limits;
  return limits;
}

Launch& launch_in_progress() {
  if (!t_launch) {
    std::fprintf(stderr, "cuda emulator: a device built-in was used outside a kernel\n");
    std::abort();
  }
  return *t_launch;
}

std::string where(const Launch& l, const Fiber& f) {
  return "block (" + std::to_string(l.block.x) + "," + std::to_string(l.block.y) + "," + std::to_string(l.block.z) +
         ") thread (" + std::to_string(f.thread.x) + "," + std::to_string(f.thread.y) + "," +
         std::to_string(f.thread.z) + ")";
}

// Back to the scheduler; a fiber that must stop (another fiber failed) never returns from here.
void yield() {
  Launch& l = launch_in_progress();
  Fiber& f = *l.current;
  if (_setjmp(f.resume) == 0) _longjmp(l.scheduler, 1);
}

[[noreturn]] void fail(const std::string& what) {
  Launch& l = launch_in_progress();
  if (l.error.empty()) l.error = what + " (" + where(l, *l.current) + ")";
  for (;;) yield();  // the scheduler stops the launch and never resumes this fiber
}

void release_barrier_if_complete(Launch& l) {
  if (l.barrier_arrived > 0 && l.barrier_arrived == l.live) {
    l.barrier_arrived = 0;
    ++l.barrier_round;
    ++l.events;
  }
}

void fiber_main() {
  Launch& l = *t_launch;
  Fiber& f = *l.current;
  try {
    l.thread(l.arg);
  } catch (const std::exception& e) {
    if (l.error.empty()) l.error = std::string("the kernel threw: ") + e.what() + " (" + where(l, f) + ")";
  } catch (...) {
    if (l.error.empty()) l.error = "the kernel threw a non-standard exception (" + where(l, f) + ")";
  }
  f.done = true;
  --l.live;
  ++l.events;
  release_barrier_if_complete(l);
  _longjmp(l.scheduler, 1);  // never returns: the fiber's stack is reused
}

cudaError_t check_config(const LaunchConfig& c) {
  const uint64_t threads = uint64_t(c.block.x) * c.block.y * c.block.z;
  if (threads == 0 || threads > 1024 || c.block.x > 1024 || c.block.y > 1024 || c.block.z > 64)
    return cudaErrorInvalidConfiguration;
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0 || c.grid.x > 0x7fffffffu || c.grid.y > 65535 ||
      c.grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  if (c.shared > kDefaultSharedLimit) {
    if (!c.kernel) throw std::logic_error("cuda emulator: a deduced template launch asks for more than 48 KiB of shared memory");
    auto it = shared_opt_in().find(c.kernel);
    if (it == shared_opt_in().end() || it->second < c.shared || c.shared > optin_shared_limit())
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

void run_block(Launch& l, bool reverse) {
  const dim3 b = l.config.block;
  l.threads = int(b.x * b.y * b.z);
  l.fibers.resize(size_t(l.threads));
  l.warps.assign(size_t((l.threads + 31) / 32), Warp{});
  l.live = l.threads;
  l.barrier_arrived = 0;
  l.events = 0;
  std::fill(l.shared, l.shared + l.config.shared, 0xff);  // NaN in f32 and bf16
  for (auto& [tag, bytes] : l.static_shared) std::fill(bytes.begin(), bytes.end(), 0xff);
  while (t_stacks.size() < size_t(l.threads)) t_stacks.push_back(std::make_unique<FiberStack>());
  for (int i = 0; i < l.threads; ++i) {
    Fiber& f = l.fibers[size_t(i)];
    f.stack = t_stacks[size_t(i)]->memory();
    f.linear = i;
    f.thread = uint3{unsigned(i) % b.x, unsigned(i) / b.x % b.y, unsigned(i) / (b.x * b.y)};
    f.done = false;
    f.started = false;
    f.waits_at = nullptr;
    f.open_group.clear();
    f.committed.clear();
  }
  // Resumes fiber i until it yields; false once the launch has failed.
  auto resume = [&l](int i) {
    Fiber& f = l.fibers[size_t(i)];
    if (f.done) return true;
    l.current = &f;
    if (_setjmp(l.scheduler) == 0) {
      if (f.started) _longjmp(f.resume, 1);
      f.started = true;
      getcontext(&f.start);
      f.start.uc_stack.ss_sp = f.stack;
      f.start.uc_stack.ss_size = kStackBytes;
      f.start.uc_link = nullptr;
      makecontext(&f.start, fiber_main, 0);
      swapcontext(&l.scheduler_context, &f.start);
    }
    return l.error.empty();
  };
  // A warp at a time, each as far as it can go (to a block barrier, or its end) before the
  // next starts: one warp running arbitrarily far ahead of the others, as the hardware allows,
  // so a read of another warp's shared memory that no barrier orders comes too early or too
  // late in one of the two orders.
  const int warps = (l.threads + 31) / 32;
  while (l.live > 0) {
    const uint64_t before = l.events;
    for (int wk = 0; wk < warps; ++wk) {
      const int w = reverse ? warps - 1 - wk : wk;
      const int lanes = std::min(32, l.threads - 32 * w);
      for (uint64_t warp_before = ~l.events; warp_before != l.events;) {
        warp_before = l.events;
        for (int k = 0; k < lanes; ++k)
          if (!resume(32 * w + (reverse ? lanes - 1 - k : k))) return;
      }
    }
    if (l.live > 0 && l.events == before) {
      std::string waiting;
      for (const Fiber& f : l.fibers)
        if (!f.done && waiting.size() < 300)
          waiting += " " + where(l, f) + " at " + (f.waits_at ? f.waits_at : "?") + ";";
      l.error = "deadlock: no thread can go on:" + waiting;
      return;
    }
  }
}

}  // namespace

void alternate_order() { t_reverse = !t_reverse; }

void host_read() {
  if (t_ran_since_read) alternate_order();
  t_ran_since_read = false;
}

void set_last_error(cudaError_t error) { t_last_error = error; }

void submit_launch(const LaunchConfig& config, std::function<void()> run) {
  const cudaError_t bad = check_config(config);
  if (bad != cudaSuccess) {
    t_last_error = bad;
    return;
  }
  add_count("kernel launches", 1);
  if (!config.stream) add_count("launches on the legacy stream", 1);
  const cudaError_t refused = submit(config.stream, std::move(run));
  if (refused != cudaSuccess) t_last_error = refused;
}

void* block_shared_bytes(const void* tag, size_t bytes) {
  Launch& l = launch_in_progress();
  for (auto& [t, storage] : l.static_shared)
    if (t == tag) return storage.data();
  // Capacity rounded up to 16-byte words so the data is 16-byte aligned (vector allocations
  // are at least 16-byte aligned on x86-64 glibc).
  l.static_shared.emplace_back(tag, std::vector<unsigned char>((bytes + 15) / 16 * 16, 0xff));
  return l.static_shared.back().second.data();
}

void kernel_error(const std::string& what) { fail(what); }

namespace {
thread_local std::unordered_map<std::string, int64_t> t_counts;
}  // namespace
void add_count(const std::string& name, int64_t n) { t_counts[name] += n; }
int64_t count(const std::string& name) {
  auto it = t_counts.find(name);
  return it == t_counts.end() ? 0 : it->second;
}
void reset_counts() { t_counts.clear(); }

namespace {
thread_local size_t t_optin_shared = kOptInSharedLimit;
}  // namespace
size_t optin_shared_limit() { return t_optin_shared; }
void set_optin_shared_limit(size_t bytes) { t_optin_shared = bytes; }

void async_copy(void* dst, const void* src, int bytes, bool valid) {
  Launch& l = launch_in_progress();
  const AsyncCopy c{dst, src, bytes, valid};
  // A copy may land any time between its issue and the wait that covers it: in the reverse
  // order at once (so a buffer overwritten while others still read it shows), else at the wait
  // (so a tile read before its wait shows).
  if (t_reverse) {
    if (valid)
      std::memcpy(dst, src, size_t(bytes));
    else
      std::memset(dst, 0, size_t(bytes));
    return;
  }
  l.current->open_group.push_back(c);
}
void async_commit() {
  Fiber& f = *launch_in_progress().current;
  f.committed.push_back(std::move(f.open_group));
  f.open_group.clear();
}
void async_wait(int pending) {
  Fiber& f = *launch_in_progress().current;
  while (int(f.committed.size()) > pending) {
    for (const AsyncCopy& c : f.committed.front()) {
      if (c.valid)
        std::memcpy(c.dst, c.src, size_t(c.bytes));
      else
        std::memset(c.dst, 0, size_t(c.bytes));
    }
    f.committed.erase(f.committed.begin());
  }
}

const uint3& thread_idx() { return launch_in_progress().current->thread; }
const uint3& block_idx() { return launch_in_progress().block; }
const dim3& block_dim() { return launch_in_progress().config.block; }
const dim3& grid_dim() { return launch_in_progress().config.grid; }
int lane_id() { return launch_in_progress().current->linear % 32; }
void* dynamic_shared_base() { return launch_in_progress().shared; }

unsigned active_mask() {
  Launch& l = launch_in_progress();
  const int first = l.current->linear / 32 * 32;
  unsigned m = 0;
  for (int i = first; i < std::min(first + 32, l.threads); ++i)
    if (!l.fibers[size_t(i)].done) m |= 1u << (i - first);
  return m;
}

void syncthreads() {
  Launch& l = launch_in_progress();
  Fiber& f = *l.current;
  const uint64_t round = l.barrier_round;
  ++l.barrier_arrived;
  ++l.events;
  release_barrier_if_complete(l);
  f.waits_at = "__syncthreads";
  while (l.barrier_round == round) yield();
  f.waits_at = nullptr;
}

const uint64_t* warp_exchange(unsigned mask, uint64_t value) {
  Launch& l = launch_in_progress();
  Fiber& f = *l.current;
  const int lane = f.linear % 32, first = f.linear / 32 * 32;
  Warp& w = l.warps[size_t(f.linear / 32)];
  const int lanes = std::min(32, l.threads - first);
  if (!(mask >> lane & 1u)) fail("a warp operation's mask leaves out the calling lane " + std::to_string(lane));
  if (lanes < 32 && (mask >> lanes) != 0) {
    char text[16];
    std::snprintf(text, sizeof text, "%08x", mask);
    fail(std::string("a warp operation's mask names lanes past the block's last thread (mask 0x") + text + ", " +
         std::to_string(lanes) + " lanes)");
  }
  if (w.arrived != 0 && w.mask != mask) fail("lanes of one warp operation disagree on its mask");
  w.mask = mask;
  const uint64_t round = w.round;
  w.slots[round & 1][lane] = value;
  w.arrived |= 1u << lane;
  ++l.events;
  if ((w.arrived & mask) == mask) {
    w.arrived = 0;
    ++w.round;
  }
  f.waits_at = "a warp operation";
  while (w.round == round) {
    for (int i = 0; i < lanes; ++i)
      if ((mask >> i & 1u) && l.fibers[size_t(first + i)].done)
        fail("lane " + std::to_string(i) + " of a warp operation's mask has exited");
    yield();
  }
  f.waits_at = nullptr;
  return w.slots[round & 1];
}

void run_grid(const LaunchConfig& config, void (*thread)(void*), void* arg) {
  const cudaError_t bad = check_config(config);
  if (bad != cudaSuccess) {
    t_last_error = bad;
    return;
  }
  if (t_launch) throw std::logic_error("cuda emulator: a kernel launched another kernel");
  t_ran_since_read = true;
  Launch l;
  l.config = config;
  l.thread = thread;
  l.arg = arg;
  // 16-byte aligned and no more: what `extern __shared__ __align__(16)` promises.
  l.shared_storage = std::make_unique<unsigned char[]>(config.shared + 64);
  const uintptr_t base = reinterpret_cast<uintptr_t>(l.shared_storage.get());
  l.shared = l.shared_storage.get() + ((64 - base % 64) % 64 + 16);
  const bool reverse = t_reverse;
  const uint64_t blocks = uint64_t(config.grid.x) * config.grid.y * config.grid.z;
  t_launch = &l;
  for (uint64_t k = 0; k < blocks; ++k) {
    const uint64_t i = reverse ? blocks - 1 - k : k;
    l.block = uint3{unsigned(i % config.grid.x), unsigned(i / config.grid.x % config.grid.y),
                    unsigned(i / (uint64_t(config.grid.x) * config.grid.y))};
    run_block(l, reverse);
    if (!l.error.empty()) break;
  }
  t_launch = nullptr;
  // Fibers stopped part way are abandoned on their stacks (the kernels own no resources).
  if (!l.error.empty()) throw std::runtime_error("cuda emulator: " + l.error);
}

}  // namespace emu

// ---- the CUDA runtime API of launches: errors and kernel attributes (the rest: cuda_emu_cudart.cpp) ----

extern "C" {

cudaError_t cudaGetLastError() { return std::exchange(emu::t_last_error, cudaSuccess); }
cudaError_t cudaPeekAtLastError() { return emu::t_last_error; }

// The errors the emulator returns, by name.
#define EMU_ERRORS(X)                                                                                           \
  X(cudaSuccess, "no error") X(cudaErrorInvalidConfiguration, "invalid configuration argument")                  \
  X(cudaErrorInvalidValue, "invalid argument") X(cudaErrorMemoryAllocation, "out of memory")                    \
  X(cudaErrorInvalidDevice, "invalid device ordinal") X(cudaErrorInvalidResourceHandle, "invalid resource handle") \
  X(cudaErrorNotSupported, "operation not supported") X(cudaErrorIllegalState, "illegal state")                 \
  X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")                      \
  X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture")               \
  X(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream")

const char* cudaGetErrorString(cudaError_t error) {
#define EMU_ERROR_STRING(code, text) \
  if (error == code) return text " (emulated)";
  EMU_ERRORS(EMU_ERROR_STRING)
#undef EMU_ERROR_STRING
  return "error (emulated)";
}
const char* cudaGetErrorName(cudaError_t error) {
#define EMU_ERROR_NAME(code, text) \
  if (error == code) return #code;
  EMU_ERRORS(EMU_ERROR_NAME)
#undef EMU_ERROR_NAME
  return "cudaErrorUnknown";
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || size_t(value) > emu::optin_shared_limit()) return cudaErrorInvalidValue;
  emu::shared_opt_in()[func] = size_t(value);
  return cudaSuccess;
}

// An H100's or H200's figures (sm_90; the opt-in shared memory as a test may have lowered it),
// for the attributes our host code asks for.
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(emu::optin_shared_limit()); return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(emu::kDefaultSharedLimit); return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 132; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
    default: return cudaErrorInvalidValue;
  }
}
}  // extern "C"
