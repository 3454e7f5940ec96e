// ProfilingBackend: a Backend that forwards everything to another one and times every op with
// that backend's EventTimer (CUDA events on the compute stream, a clock on the CPU), so
// `trainer bench --profile` shows where a step's time goes without changing what it computes.
//
// Ops are grouped by name and the shape that tells them apart (a matmul by M x N x K and its
// transposes, the others by their main operand's shape), so the QKV, MLP and head products of
// one model are separate rows. Marks are only read in collect(), after the step, so timing adds
// no synchronisation per op (an event record per op boundary is all it costs on a GPU).
// Memory calls are forwarded untimed; the wrapped backend must outlive this one.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace trainer {

struct OpProfileRow {
  std::string op;     // "matmul", "attention_forward", ...
  std::string shape;  // "M=4096 N=2304 K=768 NT" / "(32,1024,768)"
  int64_t calls = 0;
  double seconds = 0;
};

class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(Backend& inner);

  // Adds the ops timed since the last call to the totals (waits for the device's last mark).
  void collect();
  // Forgets the totals (after warm-up steps).
  void clear();
  // Totals, largest time first.
  std::vector<OpProfileRow> rows() const;
  Backend& inner() { return inner_; }

  Device device() const override { return inner_.device(); }
  std::string name() const override { return inner_.name(); }
  std::string device_name() const override { return inner_.device_name(); }
  DeviceMemory device_memory() const override { return inner_.device_memory(); }
  std::unique_ptr<EventTimer> make_event_timer() override { return inner_.make_event_timer(); }
  DType act_dtype() const override { return inner_.act_dtype(); }

  void* raw_alloc(size_t bytes) override { return inner_.raw_alloc(bytes); }
  void raw_free(void* ptr) override { inner_.raw_free(ptr); }
  void copy_from_host(void* dst, const void* src, size_t bytes) override { inner_.copy_from_host(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { inner_.copy_to_host(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { inner_.copy(dst, src, bytes); }
  void memset_zero(void* dst, size_t bytes) override { inner_.memset_zero(dst, bytes); }
  void synchronize() override { inner_.synchronize(); }
  size_t allocated_bytes() const override { return inner_.allocated_bytes(); }
  size_t peak_allocated_bytes() const override { return inner_.peak_allocated_bytes(); }

  void encoder_forward(Tensor out, Tensor tokens, Tensor wte, Tensor wpe, int64_t vocab_start) override;
  void encoder_backward(Tensor dwte, Tensor dwpe, Tensor dout, Tensor tokens, int64_t vocab_start) override;
  void layernorm_forward(Tensor out, Tensor mean, Tensor rstd, Tensor inp, Tensor weight, Tensor bias) override;
  void layernorm_backward(Tensor dinp, Tensor dweight, Tensor dbias, Tensor dout, Tensor inp, Tensor weight,
                          Tensor mean, Tensor rstd, Accumulate dinp_mode) override;
  void matmul(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor bias, Accumulate mode,
              Tensor gelu_out) override;
  void bias_backward(Tensor dbias, Tensor dout) override;
  void attention_forward(Tensor out, Tensor lse, Tensor qkv, int n_head) override;
  void attention_backward(Tensor dqkv, Tensor dout, Tensor qkv, Tensor out, Tensor lse, int n_head) override;
  void gelu_forward(Tensor out, Tensor inp) override;
  void gelu_backward(Tensor dinp, Tensor inp, Tensor dout) override;
  void add(Tensor out, Tensor a, Tensor b) override;
  void scale(Tensor x, float alpha) override;
  void fill(Tensor x, float value) override;
  void cast(Tensor dst, Tensor src) override;
  double sum_squares(Tensor x) override;
  void xent_max(Tensor maxes, Tensor logits, int64_t valid_cols) override;
  void xent_sumexp(Tensor sumexp, Tensor target_logit, Tensor logits, Tensor maxes, Tensor targets,
                   int64_t vocab_start, int64_t valid_cols) override;
  void xent_loss(Tensor losses, Tensor maxes, Tensor sumexp, Tensor target_logit) override;
  void xent_backward(Tensor dlogits, Tensor logits, Tensor maxes, Tensor sumexp, Tensor targets,
                     int64_t vocab_start, int64_t valid_cols, float dloss) override;
  void adamw(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor param_copy, const AdamWStep& h) override;

 private:
  // Runs `op` between two marks and remembers them under (name, shape).
  template <class F>
  auto timed(const char* name, std::string shape, F&& op);

  struct Pending {
    int key;
    int begin;
    int end;
  };

  Backend& inner_;
  std::unique_ptr<EventTimer> timer_;
  std::map<std::pair<std::string, std::string>, int> keys_;
  std::vector<OpProfileRow> totals_;
  std::vector<Pending> pending_;
};

}  // namespace trainer
