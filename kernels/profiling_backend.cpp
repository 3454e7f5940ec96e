// ProfilingBackend (see profiling_backend.h).
#include "kernels/profiling_backend.h"

#include <algorithm>
#include <utility>

namespace trainer {

namespace {

std::string matmul_shape(const Tensor& out, const Tensor& a, Transpose ta, Transpose tb) {
  // out (M,N) = op(a) (M,K) x op(b) (K,N); a is (M,K) or (K,M) when transposed.
  const int64_t m = out.shape[0], n = out.shape[1];
  const int64_t k = ta == Transpose::none ? a.shape[1] : a.shape[0];
  return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + " " +
         (ta == Transpose::none ? "N" : "T") + (tb == Transpose::none ? "N" : "T") + " " + dtype_name(out.dtype);
}

std::string shape_of(const Tensor& t) { return t.shape_str() + " " + dtype_name(t.dtype); }

}  // namespace

ProfilingBackend::ProfilingBackend(Backend& inner) : inner_(inner), timer_(inner.make_event_timer()) {}

template <class F>
auto ProfilingBackend::timed(const char* name, std::string shape, F&& op) {
  auto [it, added] = keys_.try_emplace({name, shape}, int(totals_.size()));
  if (added) totals_.push_back({name, std::move(shape), 0, 0});
  const int key = it->second;
  const int begin = timer_->record();
  struct Close {
    ProfilingBackend* self;
    int key, begin;
    ~Close() { self->pending_.push_back({key, begin, self->timer_->record()}); }
  } close{this, key, begin};
  return op();
}

void ProfilingBackend::collect() {
  for (const Pending& p : pending_) {
    totals_[size_t(p.key)].calls += 1;
    totals_[size_t(p.key)].seconds += timer_->seconds(p.begin, p.end);
  }
  pending_.clear();
  timer_->reset();
}

void ProfilingBackend::clear() {
  collect();
  for (OpProfileRow& r : totals_) {
    r.calls = 0;
    r.seconds = 0;
  }
}

std::vector<OpProfileRow> ProfilingBackend::rows() const {
  std::vector<OpProfileRow> out;
  for (const OpProfileRow& r : totals_)
    if (r.calls > 0) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const OpProfileRow& x, const OpProfileRow& y) { return x.seconds > y.seconds; });
  return out;
}

void ProfilingBackend::encoder_forward(Tensor out, Tensor tokens, Tensor wte, Tensor wpe, int64_t vocab_start) {
  timed("encoder_forward", shape_of(out), [&] { inner_.encoder_forward(out, tokens, wte, wpe, vocab_start); });
}
void ProfilingBackend::encoder_backward(Tensor dwte, Tensor dwpe, Tensor dout, Tensor tokens, int64_t vocab_start) {
  timed("encoder_backward", shape_of(dout), [&] { inner_.encoder_backward(dwte, dwpe, dout, tokens, vocab_start); });
}
void ProfilingBackend::layernorm_forward(Tensor out, Tensor mean, Tensor rstd, Tensor inp, Tensor weight, Tensor bias) {
  timed("layernorm_forward", shape_of(inp), [&] { inner_.layernorm_forward(out, mean, rstd, inp, weight, bias); });
}
void ProfilingBackend::layernorm_backward(Tensor dinp, Tensor dweight, Tensor dbias, Tensor dout, Tensor inp,
                                          Tensor weight, Tensor mean, Tensor rstd, Accumulate dinp_mode) {
  timed("layernorm_backward", shape_of(inp),
        [&] { inner_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, dinp_mode); });
}
void ProfilingBackend::matmul(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor bias,
                              Accumulate mode, Tensor gelu_out) {
  const char* name = gelu_out.defined() ? "matmul+gelu" : bias.defined() ? "matmul+bias" : "matmul";
  timed(name, matmul_shape(out, a, ta, tb), [&] { inner_.matmul(out, a, b, ta, tb, bias, mode, gelu_out); });
}
void ProfilingBackend::bias_backward(Tensor dbias, Tensor dout) {
  timed("bias_backward", shape_of(dout), [&] { inner_.bias_backward(dbias, dout); });
}
void ProfilingBackend::attention_forward(Tensor out, Tensor lse, Tensor qkv, int n_head) {
  timed("attention_forward", shape_of(qkv) + " heads=" + std::to_string(n_head),
        [&] { inner_.attention_forward(out, lse, qkv, n_head); });
}
void ProfilingBackend::attention_backward(Tensor dqkv, Tensor dout, Tensor qkv, Tensor out, Tensor lse, int n_head) {
  timed("attention_backward", shape_of(qkv) + " heads=" + std::to_string(n_head),
        [&] { inner_.attention_backward(dqkv, dout, qkv, out, lse, n_head); });
}
void ProfilingBackend::gelu_forward(Tensor out, Tensor inp) {
  timed("gelu_forward", shape_of(inp), [&] { inner_.gelu_forward(out, inp); });
}
void ProfilingBackend::gelu_backward(Tensor dinp, Tensor inp, Tensor dout) {
  timed("gelu_backward", shape_of(inp), [&] { inner_.gelu_backward(dinp, inp, dout); });
}
void ProfilingBackend::add(Tensor out, Tensor a, Tensor b) {
  timed("add", shape_of(out), [&] { inner_.add(out, a, b); });
}
void ProfilingBackend::scale(Tensor x, float alpha) {
  timed("scale", shape_of(x), [&] { inner_.scale(x, alpha); });
}
void ProfilingBackend::fill(Tensor x, float value) {
  timed("fill", shape_of(x), [&] { inner_.fill(x, value); });
}
void ProfilingBackend::cast(Tensor dst, Tensor src) {
  timed("cast", shape_of(src) + " -> " + dtype_name(dst.dtype), [&] { inner_.cast(dst, src); });
}
double ProfilingBackend::sum_squares(Tensor x) {
  return timed("sum_squares", shape_of(x), [&] { return inner_.sum_squares(x); });
}
void ProfilingBackend::xent_max(Tensor maxes, Tensor logits, int64_t valid_cols) {
  timed("xent_max", shape_of(logits), [&] { inner_.xent_max(maxes, logits, valid_cols); });
}
void ProfilingBackend::xent_sumexp(Tensor sumexp, Tensor target_logit, Tensor logits, Tensor maxes, Tensor targets,
                                   int64_t vocab_start, int64_t valid_cols) {
  timed("xent_sumexp", shape_of(logits),
        [&] { inner_.xent_sumexp(sumexp, target_logit, logits, maxes, targets, vocab_start, valid_cols); });
}
void ProfilingBackend::xent_loss(Tensor losses, Tensor maxes, Tensor sumexp, Tensor target_logit) {
  timed("xent_loss", shape_of(losses), [&] { inner_.xent_loss(losses, maxes, sumexp, target_logit); });
}
void ProfilingBackend::xent_backward(Tensor dlogits, Tensor logits, Tensor maxes, Tensor sumexp, Tensor targets,
                                     int64_t vocab_start, int64_t valid_cols, float dloss) {
  timed("xent_backward", shape_of(logits),
        [&] { inner_.xent_backward(dlogits, logits, maxes, sumexp, targets, vocab_start, valid_cols, dloss); });
}
void ProfilingBackend::adamw(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor param_copy, const AdamWStep& h) {
  // One row for all AdamW calls: their shapes are the parameter tensors, dozens of them.
  timed("adamw", "all parameters", [&] { inner_.adamw(param, grad, m, v, param_copy, h); });
}

}  // namespace trainer
