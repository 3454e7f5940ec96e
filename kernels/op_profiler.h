// OpProfiler: times every op that passes a Backend's front doors (Backend::run) with that
// backend's EventTimer (CUDA events on the compute stream, a clock on the CPU), so
// `trainer bench --profile` shows where a step's time goes without changing what it computes.
//
// Construction attaches the profiler to the backend (Backend::set_op_profiler), destruction
// detaches it; the backend must outlive it. The front doors file each call under its op name
// and the shape that tells calls apart (a matmul by M x N x K, its transposes and dtype; the
// others by their main operand's shape), so the QKV, MLP and head products of one model are
// separate rows, each with the bytes and FLOPs its calls move and compute at least. Marks are
// only read in collect(), after the step, so timing adds no
// synchronisation per op (an event record per op boundary is all it costs on a GPU). Memory
// calls are not timed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"

namespace trainer {

// What one call moves (its arguments, each once, an updated output twice: ArgCheck::bytes_moved)
// and the useful FLOPs it computes (op_flops in backend_ops.cpp), so a row's time reads as GB/s
// and TFLOP/s against the device's ceilings.
struct OpCost {
  double bytes = 0;
  double flops = 0;
};

struct OpProfileRow {
  std::string op;     // "matmul", "attention_forward", ...
  std::string shape;  // "M=4096 N=2304 K=768 NT bf16" / "(32, 1024, 768) f32"
  int64_t calls = 0;
  double seconds = 0;
  double bytes = 0;  // over the calls
  double flops = 0;  // over the calls
};

class OpProfiler {
 public:
  explicit OpProfiler(Backend& backend);
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Adds the ops timed since the last call to the totals (waits for the device's last mark).
  void collect();
  // Forgets the totals (after warm-up steps).
  void clear();
  // Totals, largest time first.
  std::vector<OpProfileRow> rows() const;

  // Called by the front doors around one op: begin marks its start under (name, shape) with
  // what the call moves and computes, end its end.
  struct Open {
    int key = 0;
    int begin = 0;
    OpCost cost;
  };
  Open begin(const char* name, std::string shape, OpCost cost);
  void end(const Open& open);

 private:
  struct Pending {
    int key;
    int begin;
    int end;
    OpCost cost;
  };

  Backend& backend_;
  std::unique_ptr<EventTimer> timer_;
  std::map<std::pair<std::string, std::string>, int> keys_;
  std::vector<OpProfileRow> totals_;
  std::vector<Pending> pending_;
};

}  // namespace trainer
