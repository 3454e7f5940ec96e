// CpuBackend: memory (aligned host allocations with byte accounting), FTZ/DAZ set-up, and
// dispatch of every Backend op to the fast kernels in cpu_ops.h after checking dtypes, device
// and shapes. Matrices are read as 2-D: rows = numel / size(-1), cols = size(-1), so callers
// may pass (B, T, C) tensors where an op wants (N, C).
#include "kernels/cpu/cpu_backend.h"

#include <pmmintrin.h>
#include <xmmintrin.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/cpu_host_info.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer {

namespace {

constexpr size_t kAlign = 64;  // a cache line, and one AVX-512 vector

std::string where(const char* op, const char* arg) { return std::string(op) + ": " + arg; }

void check_tensor(const Tensor& t, DType dtype, const char* op, const char* arg) {
  TRAINER_CHECK(t.defined(), where(op, arg) + " is undefined");
  TRAINER_CHECK(t.device == Device::cpu,
                where(op, arg) + " lives on " + device_name(t.device) + ", not cpu");
  TRAINER_CHECK(t.dtype == dtype, where(op, arg) + " has dtype " + dtype_name(t.dtype) +
                                      "; the CPU backend needs " + dtype_name(dtype));
}

float* f32(const Tensor& t, const char* op, const char* arg) {
  check_tensor(t, DType::f32, op, arg);
  return t.ptr<float>();
}

float* f32_or_null(const Tensor& t, const char* op, const char* arg) {
  return t.defined() ? f32(t, op, arg) : nullptr;
}

const int32_t* i32(const Tensor& t, const char* op, const char* arg) {
  check_tensor(t, DType::i32, op, arg);
  return t.ptr<int32_t>();
}

int64_t cols(const Tensor& t) { return t.ndim == 0 ? 1 : t.shape[t.ndim - 1]; }
int64_t rows(const Tensor& t) {
  int64_t r = 1;
  for (int i = 0; i + 1 < t.ndim; ++i) r *= t.shape[i];
  return r;
}

void check_numel(const Tensor& t, int64_t n, const char* op, const char* arg) {
  TRAINER_CHECK(t.numel() == n, where(op, arg) + " " + t.shape_str() + " should have " +
                                    std::to_string(n) + " elements");
}

void check_matrix(const Tensor& t, int64_t r, int64_t c, const char* op, const char* arg) {
  TRAINER_CHECK(rows(t) == r && cols(t) == c, where(op, arg) + " " + t.shape_str() +
                                                  " should be (" + std::to_string(r) + ", " +
                                                  std::to_string(c) + ")");
}

// Typed pointers that also check the element count or the matrix shape.
float* f32(const Tensor& t, int64_t n, const char* op, const char* arg) {
  float* p = f32(t, op, arg);
  check_numel(t, n, op, arg);
  return p;
}

float* f32(const Tensor& t, int64_t r, int64_t c, const char* op, const char* arg) {
  float* p = f32(t, op, arg);
  check_matrix(t, r, c, op, arg);
  return p;
}

const int32_t* i32(const Tensor& t, int64_t n, const char* op, const char* arg) {
  const int32_t* p = i32(t, op, arg);
  check_numel(t, n, op, arg);
  return p;
}

// CPU ops are synchronous, so a mark is a clock reading.
class CpuEventTimer final : public EventTimer {
 public:
  int record() override {
    marks_.push_back(std::chrono::steady_clock::now());
    return int(marks_.size()) - 1;
  }
  double seconds(int from, int to) override {
    TRAINER_CHECK(from >= 0 && to >= 0 && size_t(from) < marks_.size() && size_t(to) < marks_.size(),
                  "CpuEventTimer: unknown mark");
    return std::chrono::duration<double>(marks_[size_t(to)] - marks_[size_t(from)]).count();
  }
  void reset() override { marks_.clear(); }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() { cpu_enable_flush_denormals(); }

  Device device() const override { return Device::cpu; }
  std::string name() const override { return "cpu"; }
  std::string device_name() const override { return cpu_model_name(); }
  DeviceMemory device_memory() const override { return host_memory(); }
  std::unique_ptr<EventTimer> make_event_timer() override { return std::make_unique<CpuEventTimer>(); }
  DType act_dtype() const override { return DType::f32; }

  // ---- memory ----
  void* raw_alloc(size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kAlign, bytes) != 0)
      throw std::runtime_error("CPU backend: cannot allocate " + std::to_string(bytes) +
                               " bytes (" + std::to_string(allocated_bytes()) +
                               " already allocated)");
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[ptr] = bytes;
    allocated_ += bytes;
    if (allocated_ > peak_) peak_ = allocated_;
    return ptr;
  }

  void raw_free(void* ptr) override {
    if (!ptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(ptr);
      TRAINER_CHECK(it != sizes_.end(), "CPU backend: raw_free of a pointer it did not allocate");
      allocated_ -= it->second;
      sizes_.erase(it);
    }
    std::free(ptr);
  }

  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    cpu::copy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    cpu::copy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override { cpu::copy(dst, src, bytes); }
  void memset_zero(void* dst, size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
  void synchronize() override {}

  size_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_;
  }
  size_t peak_allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

  // ---- encoder ----
  void encoder_forward(Tensor out, Tensor tokens, Tensor wte, Tensor wpe,
                       int64_t vocab_start) override {
    const char* op = "encoder_forward";
    const int32_t* tok = i32(tokens, op, "tokens");
    TRAINER_CHECK(tokens.ndim == 2, where(op, "tokens") + " must be (B, T), got " + tokens.shape_str());
    const int64_t B = tokens.shape[0], T = tokens.shape[1];
    float* o = f32(out, op, "out");
    const float* w = f32(wte, op, "wte");
    TRAINER_CHECK(wte.ndim == 2, where(op, "wte") + " must be (V, C), got " + wte.shape_str());
    const int64_t V = wte.shape[0], C = wte.shape[1];
    check_matrix(out, B * T, C, op, "out");
    const float* p = f32_or_null(wpe, op, "wpe");
    if (p)
      TRAINER_CHECK(wpe.ndim == 2 && wpe.shape[0] >= T && wpe.shape[1] == C,
                    where(op, "wpe") + " " + wpe.shape_str() + " should be (>= T, C)");
    cpu::encoder_forward(o, tok, w, p, B, T, C, V, vocab_start);
  }

  void encoder_backward(Tensor dwte, Tensor dwpe, Tensor dout, Tensor tokens,
                        int64_t vocab_start) override {
    const char* op = "encoder_backward";
    const int32_t* tok = i32(tokens, op, "tokens");
    TRAINER_CHECK(tokens.ndim == 2, where(op, "tokens") + " must be (B, T), got " + tokens.shape_str());
    const int64_t B = tokens.shape[0], T = tokens.shape[1];
    float* dw = f32(dwte, op, "dwte");
    TRAINER_CHECK(dwte.ndim == 2, where(op, "dwte") + " must be (V, C), got " + dwte.shape_str());
    const int64_t V = dwte.shape[0], C = dwte.shape[1];
    const float* d = f32(dout, B * T, C, op, "dout");
    float* dp = f32_or_null(dwpe, op, "dwpe");
    if (dp)
      TRAINER_CHECK(dwpe.ndim == 2 && dwpe.shape[0] >= T && dwpe.shape[1] == C,
                    where(op, "dwpe") + " " + dwpe.shape_str() + " should be (>= T, C)");
    cpu::encoder_backward(dw, dp, d, tok, B, T, C, V, vocab_start);
  }

  // ---- layernorm ----
  void layernorm_forward(Tensor out, Tensor mean, Tensor rstd, Tensor inp, Tensor weight,
                         Tensor bias) override {
    const char* op = "layernorm_forward";
    const int64_t C = cols(inp), N = rows(inp);
    const float* x = f32(inp, op, "inp");
    float* o = f32(out, N, C, op, "out");
    float* m = f32(mean, N, op, "mean");
    float* s = f32(rstd, N, op, "rstd");
    const float* w = f32(weight, C, op, "weight");
    const float* b = f32(bias, C, op, "bias");
    cpu::layernorm_forward(o, m, s, x, w, b, N, C);
  }

  void layernorm_backward(Tensor dinp, Tensor dweight, Tensor dbias, Tensor dout, Tensor inp,
                          Tensor weight, Tensor mean, Tensor rstd,
                          Accumulate dinp_mode) override {
    const char* op = "layernorm_backward";
    const int64_t C = cols(inp), N = rows(inp);
    const float* x = f32(inp, op, "inp");
    float* di = f32(dinp, N, C, op, "dinp");
    const float* d = f32(dout, N, C, op, "dout");
    float* dw = f32(dweight, C, op, "dweight");
    float* db = f32(dbias, C, op, "dbias");
    const float* w = f32(weight, C, op, "weight");
    const float* m = f32(mean, N, op, "mean");
    const float* s = f32(rstd, N, op, "rstd");
    cpu::layernorm_backward(di, dw, db, d, x, w, m, s, N, C, dinp_mode);
  }

  // ---- matmul ----
  void matmul(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor bias,
              Accumulate mode, Tensor gelu_out) override {
    const char* op = "matmul";
    const float* pa = f32(a, op, "a");
    const float* pb = f32(b, op, "b");
    float* po = f32(out, op, "out");
    const bool ta_t = ta == Transpose::transpose, tb_t = tb == Transpose::transpose;
    const int64_t M = ta_t ? cols(a) : rows(a), K = ta_t ? rows(a) : cols(a);
    const int64_t N = tb_t ? rows(b) : cols(b), Kb = tb_t ? cols(b) : rows(b);
    TRAINER_CHECK(K == Kb, std::string(op) + ": inner dimensions differ: a " + a.shape_str() +
                               (ta_t ? "^T" : "") + " x b " + b.shape_str() + (tb_t ? "^T" : ""));
    check_matrix(out, M, N, op, "out");
    TRAINER_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX,
                  std::string(op) + ": a dimension exceeds sgemm's 32-bit sizes");
    const float* pbias = f32_or_null(bias, op, "bias");
    if (pbias) check_numel(bias, N, op, "bias");
    float* pg = f32_or_null(gelu_out, op, "gelu_out");
    if (pg) {
      check_numel(gelu_out, M * N, op, "gelu_out");
      TRAINER_CHECK(mode == Accumulate::overwrite,
                    std::string(op) + ": gelu_out needs Accumulate::overwrite");
    }
    cpu::matmul(po, pa, pb, pbias, M, N, K, ta, tb, mode, pg);
  }

  void bias_backward(Tensor dbias, Tensor dout) override {
    const char* op = "bias_backward";
    const float* d = f32(dout, op, "dout");
    float* db = f32(dbias, cols(dout), op, "dbias");
    cpu::bias_backward(db, d, rows(dout), cols(dout));
  }

  // ---- attention ----
  void attention_forward(Tensor out, Tensor lse, Tensor qkv, int n_head) override {
    const char* op = "attention_forward";
    const AttentionShape s = attention_shape(qkv, n_head, op);
    float* o = f32(out, s.B * s.T, s.H * s.D, op, "out");
    float* l = f32(lse, s.B * s.H * s.T, op, "lse");
    cpu::attention_forward(o, l, qkv.ptr<float>(), s.B, s.T, s.H, s.D);
  }

  void attention_backward(Tensor dqkv, Tensor dout, Tensor qkv, Tensor out, Tensor lse,
                          int n_head) override {
    const char* op = "attention_backward";
    const AttentionShape s = attention_shape(qkv, n_head, op);
    float* dq = f32(dqkv, s.B * s.T, 3 * s.H * s.D, op, "dqkv");
    const float* d = f32(dout, s.B * s.T, s.H * s.D, op, "dout");
    const float* o = f32(out, s.B * s.T, s.H * s.D, op, "out");
    const float* l = f32(lse, s.B * s.H * s.T, op, "lse");
    cpu::attention_backward(dq, d, qkv.ptr<float>(), o, l, s.B, s.T, s.H, s.D);
  }

  // ---- element-wise ----
  void gelu_forward(Tensor out, Tensor inp) override {
    const float* x = f32(inp, "gelu_forward", "inp");
    float* o = f32(out, inp.numel(), "gelu_forward", "out");
    cpu::gelu_forward(o, x, inp.numel());
  }

  void gelu_backward(Tensor dinp, Tensor inp, Tensor dout) override {
    const char* op = "gelu_backward";
    const float* x = f32(inp, op, "inp");
    const float* d = f32(dout, inp.numel(), op, "dout");
    float* di = f32(dinp, inp.numel(), op, "dinp");
    cpu::gelu_backward(di, x, d, inp.numel());
  }

  void add(Tensor out, Tensor a, Tensor b) override {
    const float* pa = f32(a, "add", "a");
    const float* pb = f32(b, a.numel(), "add", "b");
    float* po = f32(out, a.numel(), "add", "out");
    cpu::add(po, pa, pb, a.numel());
  }

  void scale(Tensor x, float alpha) override { cpu::scale(f32(x, "scale", "x"), alpha, x.numel()); }

  void fill(Tensor x, float value) override { cpu::fill(f32(x, "fill", "x"), value, x.numel()); }

  void cast(Tensor dst, Tensor src) override {
    const float* s = f32(src, "cast", "src");
    float* d = f32(dst, src.numel(), "cast", "dst");
    cpu::copy(d, s, src.bytes());
  }

  double sum_squares(Tensor x) override {
    return cpu::sum_squares(f32(x, "sum_squares", "x"), x.numel());
  }

  // ---- cross-entropy ----
  void xent_max(Tensor maxes, Tensor logits, int64_t valid_cols) override {
    const char* op = "xent_max";
    const float* lg = f32(logits, op, "logits");
    check_valid_cols(logits, valid_cols, op);
    float* mx = f32(maxes, rows(logits), op, "maxes");
    cpu::xent_max(mx, lg, rows(logits), cols(logits), valid_cols);
  }

  void xent_sumexp(Tensor sumexp, Tensor target_logit, Tensor logits, Tensor maxes,
                   Tensor targets, int64_t vocab_start, int64_t valid_cols) override {
    const char* op = "xent_sumexp";
    const float* lg = f32(logits, op, "logits");
    check_valid_cols(logits, valid_cols, op);
    const int64_t N = rows(logits);
    float* se = f32(sumexp, N, op, "sumexp");
    float* tl = f32(target_logit, N, op, "target_logit");
    const float* mx = f32(maxes, N, op, "maxes");
    const int32_t* tg = i32(targets, N, op, "targets");
    cpu::xent_sumexp(se, tl, lg, mx, tg, N, cols(logits), vocab_start, valid_cols);
  }

  void xent_loss(Tensor losses, Tensor maxes, Tensor sumexp, Tensor target_logit) override {
    const char* op = "xent_loss";
    const int64_t N = losses.numel();
    float* lo = f32(losses, op, "losses");
    const float* mx = f32(maxes, N, op, "maxes");
    const float* se = f32(sumexp, N, op, "sumexp");
    const float* tl = f32(target_logit, N, op, "target_logit");
    cpu::xent_loss(lo, mx, se, tl, N);
  }

  void xent_backward(Tensor dlogits, Tensor logits, Tensor maxes, Tensor sumexp, Tensor targets,
                     int64_t vocab_start, int64_t valid_cols, float dloss) override {
    const char* op = "xent_backward";
    const float* lg = f32(logits, op, "logits");
    check_valid_cols(logits, valid_cols, op);
    const int64_t N = rows(logits);
    float* dl = f32(dlogits, N, cols(logits), op, "dlogits");
    const float* mx = f32(maxes, N, op, "maxes");
    const float* se = f32(sumexp, N, op, "sumexp");
    const int32_t* tg = i32(targets, N, op, "targets");
    cpu::xent_backward(dl, lg, mx, se, tg, N, cols(logits), vocab_start, valid_cols, dloss);
  }

  // ---- optimizer ----
  void adamw(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor param_copy,
             const AdamWStep& h) override {
    const char* op = "adamw";
    const int64_t n = param.numel();
    float* p = f32(param, op, "param");
    const float* g = f32(grad, n, op, "grad");
    float* pm = f32(m, n, op, "m");
    float* pv = f32(v, n, op, "v");
    float* pc = f32_or_null(param_copy, op, "param_copy");
    if (pc) check_numel(param_copy, n, op, "param_copy");
    TRAINER_CHECK(h.step >= 1, "adamw: step is 1-based, got " + std::to_string(h.step));
    cpu::adamw(p, g, pm, pv, pc, n, h);
  }

 private:
  struct AttentionShape {
    int64_t B, T, H, D;
  };

  static AttentionShape attention_shape(const Tensor& qkv, int n_head, const char* op) {
    f32(qkv, op, "qkv");
    TRAINER_CHECK(qkv.ndim == 3 && qkv.shape[2] % 3 == 0,
                  where(op, "qkv") + " must be (B, T, 3*C), got " + qkv.shape_str());
    const int64_t C = qkv.shape[2] / 3;
    TRAINER_CHECK(n_head > 0 && C % n_head == 0 && C > 0,
                  std::string(op) + ": n_head " + std::to_string(n_head) + " must divide C " +
                      std::to_string(C));
    return {qkv.shape[0], qkv.shape[1], n_head, C / n_head};
  }

  static void check_valid_cols(const Tensor& logits, int64_t valid_cols, const char* op) {
    TRAINER_CHECK(valid_cols >= 0 && valid_cols <= cols(logits),
                  std::string(op) + ": valid_cols " + std::to_string(valid_cols) +
                      " outside [0, " + std::to_string(cols(logits)) + "]");
  }

  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  size_t allocated_ = 0;
  size_t peak_ = 0;
};

}  // namespace

void cpu_enable_flush_denormals() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#pragma omp parallel
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace trainer
