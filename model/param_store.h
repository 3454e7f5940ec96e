// ParamStore: this rank's parameters, gradients and optimizer state in flat buffers laid out
// by StageLayout, and ZeRO over the data group as its ZeroPolicy names it
// (parallel/zero_policy.h): which of optimizer state, gradients and parameters are sharded,
// how gradients are reduced (bucketed all-reduce once per step, or a reduce-scatter per unit
// every micro-batch), how parameters become whole (all-gathered after the step, or per unit on
// acquire and freed on release) and where the fp32 master lives.
// The loss is scaled by 1 / (tokens per step over all data ranks), so every reduction is a
// plain sum. Parameter gradients are f32; compute parameters have the backend's act dtype.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "model/optimizer_state.h"
#include "model/stage_layout.h"
#include "parallel/comm.h"
#include "parallel/zero_policy.h"

namespace trainer {

enum class TpPartialGrads : uint8_t { per_head, all_replicated };

// Whether the data group's gradient reductions round to bf16: asked for (reduce_dtype, see the
// constructor) and a group of more than one rank to reduce over (a reduction of one rank is the
// identity, so nothing is rounded). The planner's figures ask the same.
constexpr bool reduces_in_bf16(DType reduce_dtype, int dp_size) { return reduce_dtype == DType::bf16 && dp_size > 1; }

// When ParamGather::after_step's all-gathers (ZeRO-1, started per unit after AdamW) are waited
// for: at the end of optimizer_step, or each unit's when the next pass first acquires it, so
// the gathers overlap the next step's forward (Megatron's --overlap-param-gather). The default
// follows the data group's transport: on_first_use where a wait only orders streams (NCCL,
// InFlightCost::none), in_step where MPI holds a buffer per operation in flight.
enum class GatherWait : uint8_t { in_step, on_first_use };

struct MemoryFigures {
  int64_t params = 0;      // compute parameters (and ZeRO-3 gather buffers at their peak)
  int64_t master = 0;      // fp32 master copy where it is separate from the compute copy
  int64_t grads = 0;       // gradient accumulators
  int64_t optimizer = 0;   // AdamW moments
  int64_t comm = 0;        // reduce-scatter / gather staging buffers (peak), and a bf16 wire
};

class ParamStore {
 public:
  // dp: the data-parallel group; embed: the first/last stage pair for the tied embedding
  // (null when there is none). reduce_dtype (parallel.grad_reduce_dtype): what the data group's
  // gradient reductions carry: f32, or bf16 (half the bytes: each bucket or unit is rounded to
  // bf16, summed in bf16 and cast back; the accumulators stay f32). The tied embedding's and
  // the tensor group's gradient sums are f32 either way.
  ParamStore(const StageLayout& layout, Backend& backend, Comm& dp, Comm* embed, ZeroPolicy zero,
             double bucket_mb, DType reduce_dtype = DType::f32);
  ~ParamStore();

  const StageLayout& layout() const { return layout_; }
  ZeroPolicy zero() const;

  // Initial values: a pure function of (seed, global name, global index). Drawn on the
  // backend's device (Backend::init_normal, the same bits on every backend) into an f32
  // staging buffer of at most kInitChunkElements, then copied or cast into every copy this rank
  // keeps: nothing crosses from the host, and a few MB beyond the model itself are needed.
  static constexpr int64_t kInitChunkElements = int64_t(1) << 20;
  void init_random(uint64_t seed);
  // Sets every parameter from global values: fetch(spec, global_range, out) fills out with
  // the global elements [range.begin, range.end) of that tensor.
  using FetchFn = std::function<void(const ParamSpec&, Range, float*)>;
  void load(const FetchFn& fetch);
  // This rank's local tensor-parallel slice of a parameter as f32 on the host (collective over
  // the data group: every data rank must call it with the same parameter).
  std::vector<float> local_values(const LocalParam& param);

  // Compute parameters of unit u (act dtype, flat, padded). Under ZeRO-3 this all-gathers the
  // unit; every acquire is paired with a release.
  Tensor acquire(int unit);
  void release(int unit);
  // A parameter's view inside an acquired unit.
  Tensor view(Tensor unit_base, int unit, const std::string& name) const;

  // ---- gradients ----
  void zero_grads();
  // Micro-batch boundaries: bucketed all-reduces run after the step's last micro-batch only.
  void begin_micro(bool last_micro);
  // Where backward accumulates unit u's gradients (f32, flat, padded).
  Tensor grads(int unit);
  // Unit u has received every contribution of this micro-batch: start its reduction.
  void grads_done(int unit);
  // Waits for all reductions and sums the tied embedding's gradient between the first and last
  // stage (and, after set_tensor_partial_grads, the replicated parameters' gradients over the
  // tensor group). After this the gradients this rank updates are final.
  void finish_grads();
  // Starts the reduction of what the backward left staged (the step's last bucket) without
  // waiting, so the trainer can start it before it waits for the device; finish_grads does
  // the same if this was not called.
  void flush_grads();
  // Which replicated parameters (TpSplit::none) get partial gradients on each tensor rank,
  // summed over `tp` by finish_grads: under sequence parallelism all of them (each rank sees
  // its own rows only); otherwise only the per-head ones (TpGrad::per_head: qk_norm's
  // weights, each rank seeing its own heads).
  void set_tensor_partial_grads(Comm* tp, TpPartialGrads which);
  void set_gather_wait(GatherWait wait);
  // Sum of squares of the gradients this rank owns for the global norm (each element counted
  // on exactly one rank of the world); the caller sums it over the world.
  double grad_sq_norm();
  // AdamW on the owned range, then parameters made whole again (ParamGather::after_step: waited
  // for as GatherWait says).
  // `step` holds the step's settings; per tensor the store sets weight_decay to 0 where the
  // parameter table says so, keys the seed by the tensor's name and sets the offset.
  void optimizer_step(const AdamWStep& step);

  // ---- optimizer state access (checkpoints) ----
  // read_state: the values of this rank's owned slice (StageLayout::owned_slice), so the data
  // group together reads every element once. write_state: values for needed_range(), the
  // part of the local slice this rank keeps of that state (all of it for a full copy).
  std::vector<float> read_state(const LocalParam& param, OptimizerState kind);
  Range needed_range(const LocalParam& param, OptimizerState kind) const;
  void write_state(const LocalParam& param, OptimizerState kind, const std::vector<float>& values);
  // After write_state of the master, refresh the compute copy and make parameters whole.
  void sync_compute_from_master();

  MemoryFigures memory() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  const StageLayout& layout_;
};

}  // namespace trainer
