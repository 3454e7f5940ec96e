// A CPU emulator of the CUDA execution model for our hand-written kernels, so their logic runs
// where no GPU is: each translation unit of kernels/cuda/*.cu is rewritten by emu_translate.py
// and compiled by the host compiler with this header force-included. It provides what device
// code uses and a host compiler lacks: threadIdx/blockIdx/blockDim/gridDim, __syncthreads,
// __syncwarp, warp shuffles and votes, the atomics, __shared__ (block-shared storage), dynamic
// shared memory, the float/bit intrinsics, and launches (::emu::launch, cuda_emu_runtime.cpp),
// which go to their stream (cuda_emu_cudart.cpp: run at once, or recorded while it is captured).
//
// Model (what it checks and what it cannot):
// - A launch runs its blocks one after another, each block's threads as fibers on one OS
//   thread, a warp at a time: each warp runs as far as it can (to a block barrier or its end)
//   before the next starts, its lanes each to their next warp operation. So a warp reads
//   shared memory that another warp has not written yet, or has already overwritten, where a
//   barrier is missing. Blocks, warps and lanes run in increasing or decreasing order,
//   switched by alternate_order(), which the runtime calls when the host reads device memory
//   after kernels ran (cuda_emu_stream.h: host_read), so such a race shows in one of two runs
//   of an op whose results a test reads in between, which then differ.
// - Launch configurations are checked as the hardware does (block size, grid dimensions,
//   dynamic shared memory above 48 KiB only after cudaFuncSetAttribute, at most 227 KiB or the
//   lower opt-in limit a test sets, cuda_emu_counts.h): a bad one is a launch error that
//   TRAINER_LAUNCH_CHECK reports. Shared memory, dynamic and static, starts every block filled
//   with NaN bytes; the dynamic kind is 16-byte aligned, no more.
// - Warp operations need every lane named in the mask to arrive; a lane that exited or does
//   not exist, lanes that disagree on the mask, or a shuffle reading a lane outside it, is an
//   error (undefined on the hardware). A barrier waits for the block's threads that have not
//   exited, as on Volta and later.
// - The tensor-core instructions (kernels/cuda/cuda_ptx.cuh) have an emulated twin in
//   shadow/: mma.sync and ldmatrix collective over the warp with the PTX ISA's fragment
//   layouts, ldmatrix rows and cp.async addresses aligned as the PTX requires, and cp.async
//   copies landing as async_copy says.
// - Not modelled: timing, the memory model across blocks, warp-synchronous code without
//   *_sync intrinsics (fibers are never in lockstep), shared memory limits of static arrays,
//   registers, launch bounds, and the exact results of the fast-math intrinsics (__expf is
//   expf here).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tests/kernels/cuda_emu/cuda_emu_counts.h"

namespace emu {

// The thread being run (fiber-local state of the launch in progress on this OS thread).
const uint3& thread_idx();
const uint3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();

// Switches the order in which later launches run their blocks and threads.
void alternate_order();

void syncthreads();
// cp.async per thread: a copy lands at some time between its issue and the wait that leaves at
// most `pending` newer committed groups outstanding: in one of the two orders at the wait (a
// tile read before its wait reads stale bytes), in the other at once (a buffer refilled while
// other warps still read it changes under them). Copies not yet committed stay pending.
void async_copy(void* dst, const void* src, int bytes, bool valid);
void async_commit();
void async_wait(int pending);
// Every lane in `mask` contributes `value`; returns the 32 slots of this round (valid until the
// caller's next warp operation).
const uint64_t* warp_exchange(unsigned mask, uint64_t value);
int lane_id();
unsigned active_mask();
void* dynamic_shared_base();
// Stops the launch with `what` (a misuse the hardware would fault on or leave undefined).
[[noreturn]] void kernel_error(const std::string& what);
// A static __shared__ array of the block (emu_translate.py rewrites each declaration into one),
// keyed by its declaration's `tag`: refilled with NaN bytes at each block's start, since
// nothing carries over from block to block on the hardware.
void* block_shared_bytes(const void* tag, size_t bytes);
template <class T>
T& block_shared(const void* tag) {
  return *static_cast<T*>(block_shared_bytes(tag, sizeof(T)));
}

template <class T>
T* dynamic_shared() {
  return static_cast<T*>(dynamic_shared_base());
}

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "a warp shuffle moves at most 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
// The value of lane `src`, or the caller's own where src is past the end of its width segment
// (or, with `earlier` = own_below, before its start); xor may read earlier segments. A source
// lane outside the mask is an error (undefined on the hardware).
enum class Earlier : uint8_t { allowed, own_below };
template <class T>
T shuffle(unsigned mask, T var, int src, int width, Earlier earlier) {
  const int lane = lane_id();
  const uint64_t* slots = warp_exchange(mask, to_bits(var));
  const int base = lane & ~(width - 1);
  if (src >= base + width || src > 31 || (earlier == Earlier::own_below && src < base) || src < 0) return var;
  if (!(mask >> src & 1u)) kernel_error("a shuffle reads lane " + std::to_string(src) + ", outside its mask");
  return from_bits<T>(slots[src]);
}

struct LaunchConfig {
  dim3 grid, block;
  size_t shared = 0;
  const void* kernel = nullptr;
  cudaStream_t stream = nullptr;
};
// Runs `thread` once per thread of the grid (see the model above). Throws std::runtime_error
// when the kernel misuses a barrier or a warp operation, deadlocks, or throws.
void run_grid(const LaunchConfig& config, void (*thread)(void*), void* arg);
// Issues a launch on config.stream: a configuration the hardware refuses is a launch error,
// kept for cudaGetLastError, and nothing runs; else `run` runs at once, or, while the stream is
// captured, is recorded into its graph (cuda_emu_cudart.cpp).
void submit_launch(const LaunchConfig& config, std::function<void()> run);

// Runs `call_kernel(args...)` once per thread of the grid. The arguments are copied once, at
// the launch (so a captured launch replays the values it had then), and each thread calls with
// its own copy, since a kernel may modify its parameters.
template <class F, class... A>
void run_call(const LaunchConfig& config, F call_kernel, A&&... args) {
  struct Call {
    F call_kernel;
    std::tuple<std::decay_t<A>...> params;
  };
  auto call = std::make_shared<Call>(Call{call_kernel, std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)});
  submit_launch(config, [config, call] {
    run_grid(config, [](void* p) {
      Call& c = *static_cast<Call*>(p);
      std::tuple<std::decay_t<A>...> mine = c.params;
      std::apply(c.call_kernel, mine);
    }, call.get());
  });
}

// kernel<<<grid, block, shared, stream>>>(args) becomes launch(kernel, grid, block, shared,
// stream)(args).
template <class... P>
class Launcher {
 public:
  Launcher(void (*kernel)(P...), const LaunchConfig& config) : kernel_(kernel), config_(config) {}
  template <class... A>
  void operator()(A&&... args) const {
    run_call(config_, kernel_, std::forward<A>(args)...);
  }

 private:
  void (*kernel_)(P...);
  LaunchConfig config_;
};

template <class... P>
Launcher<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = nullptr) {
  return Launcher<P...>(kernel, LaunchConfig{grid, block, shared, reinterpret_cast<const void*>(kernel), stream});
}

// A launch of a kernel template whose arguments nvcc deduces: `call_kernel` is a generic
// lambda that calls the kernel by name. Such launches cannot opt in to more than 48 KiB of
// dynamic shared memory (none of ours does), since the opt-in names the kernel's address.
class DeducedLauncher {
 public:
  explicit DeducedLauncher(const LaunchConfig& config) : config_(config) {}
  template <class F, class... A>
  void operator()(F call_kernel, A&&... args) const {
    run_call(config_, call_kernel, std::forward<A>(args)...);
  }

 private:
  LaunchConfig config_;
};

inline DeducedLauncher launch_deduced(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = nullptr) {
  return DeducedLauncher(LaunchConfig{grid, block, shared, nullptr, stream});
}

}  // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx())
#define blockDim (::emu::block_dim())
#define gridDim (::emu::grid_dim())
#define warpSize 32

// emu_translate.py rewrites every __shared__ declaration of a .cu file (block_shared,
// dynamic_shared); one left anywhere else (a header) does not compile.
#undef __shared__
#define __shared__ __shared___is_rewritten_by_emu_translate_py_only_in_cu_files
#undef __launch_bounds__
#define __launch_bounds__(...)

inline void __syncthreads() { ::emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::emu::warp_exchange(mask, 0); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline unsigned __activemask() { return ::emu::active_mask(); }

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  const int lane = ::emu::lane_id();
  return ::emu::shuffle(mask, var, (lane & ~(width - 1)) + (src_lane & (width - 1)), width, ::emu::Earlier::allowed);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return ::emu::shuffle(mask, var, ::emu::lane_id() ^ lane_mask, width, ::emu::Earlier::allowed);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::emu::shuffle(mask, var, ::emu::lane_id() + int(delta), width, ::emu::Earlier::allowed);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::emu::shuffle(mask, var, ::emu::lane_id() - int(delta), width, ::emu::Earlier::own_below);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  const uint64_t* slots = ::emu::warp_exchange(mask, predicate != 0);
  unsigned r = 0;
  for (int l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && slots[l]) r |= 1u << l;
  return r;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) == mask; }

// Fibers never run at once: the atomics are plain read-modify-writes.
template <class T>
T atomicAdd(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}
template <class T>
T atomicMax(T* address, T value) {
  const T old = *address;
  if (value > old) *address = value;
  return old;
}
template <class T>
T atomicMin(T* address, T value) {
  const T old = *address;
  if (value < old) *address = value;
  return old;
}
template <class T>
T atomicExch(T* address, T value) {
  const T old = *address;
  *address = value;
  return old;
}
template <class T>
T atomicCAS(T* address, T compare, T value) {
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}

template <class T>
T __ldg(const T* p) {
  return *p;
}

template <class A, class B>
std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B>
std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(b) : C(a);
}

inline float __uint_as_float(unsigned x) { return ::emu::from_bits<float>(x); }
inline unsigned __float_as_uint(float x) { return unsigned(::emu::to_bits(x)); }
inline float __int_as_float(int x) { return ::emu::from_bits<float>(uint32_t(x)); }
inline int __float_as_int(float x) { return int(uint32_t(::emu::to_bits(x))); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
// The IEEE-rounded operations: one rounding each (the emulator's TUs are compiled with
// -ffp-contract=off, so nothing is fused behind them).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __double2float_rn(double x) { return float(x); }

// nvcc's cuda_runtime.h takes a kernel itself here; the host compiler sees only the C form.
template <class... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}
