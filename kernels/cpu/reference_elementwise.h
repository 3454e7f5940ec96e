// Reference loops for every Backend op (see reference_ops.h): literal definitions, single
// thread, accumulation in F (double where the interface says so). Explicitly instantiated for
// float and double at the end of the file.
#include "kernels/cpu/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace trainer::ref {

namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

template <class F>
void encoder_forward(F* out, const int32_t* tokens, const F* wte, const F* wpe, int64_t B,
                     int64_t T, int64_t C, int64_t V, int64_t vocab_start) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = tokens[b * T + t] - vocab_start;
      F* o = out + (b * T + t) * C;
      for (int64_t c = 0; c < C; ++c) {
        F x = (row >= 0 && row < V) ? wte[row * C + c] : F(0);
        if (wpe) x += wpe[t * C + c];
        o[c] = x;
      }
    }
  }
}

template <class F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int32_t* tokens, int64_t B,
                      int64_t T, int64_t C, int64_t V, int64_t vocab_start) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = tokens[b * T + t] - vocab_start;
      const F* d = dout + (b * T + t) * C;
      for (int64_t c = 0; c < C; ++c) {
        if (row >= 0 && row < V) dwte[row * C + c] += d[c];
        if (dwpe) dwpe[t * C + c] += d[c];
      }
    }
  }
}

template <class F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const F* x = inp + n * C;
    F m = 0;
    for (int64_t c = 0; c < C; ++c) m += x[c];
    m /= F(C);
    F var = 0;
    for (int64_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= F(C);
    const F s = F(1) / std::sqrt(var + F(kLayernormEps));
    for (int64_t c = 0; c < C; ++c) out[n * C + c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <class F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp,
                        const F* weight, const F* mean, const F* rstd, int64_t N, int64_t C,
                        Accumulate dinp_mode) {
  for (int64_t n = 0; n < N; ++n) {
    const F* x = inp + n * C;
    const F* d = dout + n * C;
    F dnorm_mean = 0;
    F dnorm_norm_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      const F norm = (x[c] - mean[n]) * rstd[n];
      dnorm_mean += weight[c] * d[c];
      dnorm_norm_mean += weight[c] * d[c] * norm;
    }
    dnorm_mean /= F(C);
    dnorm_norm_mean /= F(C);
    for (int64_t c = 0; c < C; ++c) {
      const F norm = (x[c] - mean[n]) * rstd[n];
      dbias[c] += d[c];
      dweight[c] += norm * d[c];
      const F g = (weight[c] * d[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
      dinp[n * C + c] = dinp_mode == Accumulate::add ? dinp[n * C + c] + g : g;
    }
  }
}

template <class F>
void matmul(F* out, const F* a, const F* b, const F* bias, int64_t M, int64_t N, int64_t K,
            Transpose ta, Transpose tb, Accumulate mode, F* gelu_out) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      F s = bias ? bias[j] : F(0);
      for (int64_t k = 0; k < K; ++k) {
        const F av = ta == Transpose::none ? a[i * K + k] : a[k * M + i];
        const F bv = tb == Transpose::none ? b[k * N + j] : b[j * K + k];
        s += av * bv;
      }
      out[i * N + j] = mode == Accumulate::add ? out[i * N + j] + s : s;
      if (gelu_out) gelu_out[i * N + j] = gelu(out[i * N + j]);
    }
  }
}

template <class F>
void bias_backward(F* dbias, const F* dout, int64_t M, int64_t N) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) dbias[j] += dout[i * N + j];
}

template <class F>
void attention_forward(F* out, F* lse, const F* qkv, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const F scale = F(1) / std::sqrt(F(D));
  std::vector<F> s(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t koff = C + (h / group) * D, voff = C + Hkv * D + (h / group) * D;
      for (int64_t i = 0; i < T; ++i) {
        const F* q = qkv + (b * T + i) * W + h * D;
        F mx = -std::numeric_limits<F>::infinity();
        for (int64_t j = 0; j <= i; ++j) {
          const F* k = qkv + (b * T + j) * W + koff;
          F dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        F sum = 0;
        for (int64_t j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
        const F l = mx + std::log(sum);
        lse[(b * H + h) * T + i] = l;
        F* o = out + (b * T + i) * C + h * D;
        for (int64_t d = 0; d < D; ++d) o[d] = 0;
        for (int64_t j = 0; j <= i; ++j) {
          const F p = std::exp(s[j] - l);
          const F* v = qkv + (b * T + j) * W + voff;
          for (int64_t d = 0; d < D; ++d) o[d] += p * v[d];
        }
      }
    }
  }
}

template <class F>
void attention_backward(F* dqkv, const F* dout, const F* qkv, const F* lse, int64_t B, int64_t T,
                        int64_t H, int64_t Hkv, int64_t D) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const F scale = F(1) / std::sqrt(F(D));
  std::fill(dqkv, dqkv + B * T * W, F(0));
  std::vector<F> p(static_cast<size_t>(T));
  std::vector<F> dp(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t koff = C + (h / group) * D, voff = C + Hkv * D + (h / group) * D;
      for (int64_t i = 0; i < T; ++i) {
        const F* q = qkv + (b * T + i) * W + h * D;
        const F* dO = dout + (b * T + i) * C + h * D;
        const F l = lse[(b * H + h) * T + i];
        F p_dp = 0;  // sum_j p_ij dp_ij
        for (int64_t j = 0; j <= i; ++j) {
          const F* k = qkv + (b * T + j) * W + koff;
          const F* v = qkv + (b * T + j) * W + voff;
          F dot = 0;
          F dv_dot = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += q[d] * k[d];
            dv_dot += dO[d] * v[d];
          }
          p[j] = std::exp(dot * scale - l);
          dp[j] = dv_dot;
          p_dp += p[j] * dp[j];
        }
        F* dq = dqkv + (b * T + i) * W + h * D;
        for (int64_t j = 0; j <= i; ++j) {
          const F ds = p[j] * (dp[j] - p_dp) * scale;
          const F* k = qkv + (b * T + j) * W + koff;
          F* dk = dqkv + (b * T + j) * W + koff;
          F* dv = dqkv + (b * T + j) * W + voff;
          for (int64_t d = 0; d < D; ++d) {
            dq[d] += ds * k[d];
            dk[d] += ds * q[d];
            dv[d] += p[j] * dO[d];
          }
        }
      }
    }
  }
}

template <class F>
F gelu(F x) {
  const F s = std::sqrt(F(2) / F(kPi));
  return F(0.5) * x * (F(1) + std::tanh(s * (x + F(0.044715) * x * x * x)));
}

template <class F>
F gelu_grad(F x) {
  const F s = std::sqrt(F(2) / F(kPi));
  const F u = s * (x + F(0.044715) * x * x * x);
  const F th = std::tanh(u);
  const F du = s * (F(1) + F(3) * F(0.044715) * x * x);
  return F(0.5) * (F(1) + th) + F(0.5) * x * (F(1) - th * th) * du;
}

template <class F>
void gelu_forward(F* out, const F* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu(inp[i]);
}

template <class F>
void gelu_backward(F* dinp, const F* inp, const F* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dinp[i] = gelu_grad(inp[i]) * dout[i];
}

template <class F>
void add(F* out, const F* a, const F* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class F>
void scale(F* x, F alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

template <class F>
void fill(F* x, F value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = value;
}

template <class F>
void cast(F* dst, const F* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

template <class F>
double sum_squares(const F* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

template <class F>
void xent_max(F* maxes, const F* logits, int64_t N, int64_t Vl, int64_t valid_cols) {
  for (int64_t n = 0; n < N; ++n) {
    F mx = -std::numeric_limits<F>::infinity();
    for (int64_t v = 0; v < valid_cols; ++v) mx = std::max(mx, logits[n * Vl + v]);
    maxes[n] = mx;
  }
}

template <class F>
void xent_sumexp(F* sumexp, F* target_logit, const F* logits, const F* maxes,
                 const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                 int64_t valid_cols) {
  for (int64_t n = 0; n < N; ++n) {
    F s = 0;
    for (int64_t v = 0; v < valid_cols; ++v) s += std::exp(logits[n * Vl + v] - maxes[n]);
    sumexp[n] = s;
    const int64_t col = targets[n] - vocab_start;
    target_logit[n] = (col >= 0 && col < valid_cols) ? logits[n * Vl + col] : F(0);
  }
}

template <class F>
void xent_loss(F* losses, const F* maxes, const F* sumexp, const F* target_logit, int64_t N) {
  for (int64_t n = 0; n < N; ++n) losses[n] = std::log(sumexp[n]) + maxes[n] - target_logit[n];
}

template <class F>
void xent_backward(F* dlogits, const F* logits, const F* maxes, const F* sumexp,
                   const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                   int64_t valid_cols, F dloss) {
  for (int64_t n = 0; n < N; ++n) {
    const int64_t col = targets[n] - vocab_start;
    for (int64_t v = 0; v < Vl; ++v) {
      F g = 0;
      if (v < valid_cols) {
        const F p = std::exp(logits[n * Vl + v] - maxes[n]) / sumexp[n];
        g = dloss * (p - (v == col ? F(1) : F(0)));
      }
      dlogits[n * Vl + v] = g;
    }
  }
}

template <class F>
void adamw(F* param, const F* grad, F* m, F* v, F* param_copy, int64_t n, const AdamWStep& h) {
  const double t = double(h.step);
  const F bias1 = F(1.0 - std::pow(double(h.beta1), t));
  const F bias2_sqrt = F(std::sqrt(1.0 - std::pow(double(h.beta2), t)));
  const F lr = F(h.lr);
  const F b1 = F(h.beta1);
  const F b2 = F(h.beta2);
  for (int64_t i = 0; i < n; ++i) {
    const F g = grad[i] * F(h.grad_scale);
    param[i] *= F(1) - lr * F(h.weight_decay);
    m[i] = b1 * m[i] + (F(1) - b1) * g;
    v[i] = b2 * v[i] + (F(1) - b2) * g * g;
    param[i] -= lr / bias1 * m[i] / (std::sqrt(v[i]) / bias2_sqrt + F(h.eps));
    if (param_copy) param_copy[i] = param[i];
  }
}

#define TRAINER_REF_INSTANTIATE(F)                                                               \
  template void encoder_forward<F>(F*, const int32_t*, const F*, const F*, int64_t, int64_t,     \
                                   int64_t, int64_t, int64_t);                                   \
  template void encoder_backward<F>(F*, F*, const F*, const int32_t*, int64_t, int64_t, int64_t, \
                                    int64_t, int64_t);                                           \
  template void layernorm_forward<F>(F*, F*, F*, const F*, const F*, const F*, int64_t, int64_t); \
  template void layernorm_backward<F>(F*, F*, F*, const F*, const F*, const F*, const F*,        \
                                      const F*, int64_t, int64_t, Accumulate);                   \
  template void matmul<F>(F*, const F*, const F*, const F*, int64_t, int64_t, int64_t, Transpose, \
                          Transpose, Accumulate, F*);                                            \
  template void bias_backward<F>(F*, const F*, int64_t, int64_t);                                \
  template void attention_forward<F>(F*, F*, const F*, int64_t, int64_t, int64_t, int64_t,      \
                                     int64_t);                                                   \
  template void attention_backward<F>(F*, const F*, const F*, const F*, int64_t, int64_t,        \
                                      int64_t, int64_t, int64_t);                                \
  template F gelu<F>(F);                                                                         \
  template F gelu_grad<F>(F);                                                                    \
  template void gelu_forward<F>(F*, const F*, int64_t);                                          \
  template void gelu_backward<F>(F*, const F*, const F*, int64_t);                               \
  template void add<F>(F*, const F*, const F*, int64_t);                                         \
  template void scale<F>(F*, F, int64_t);                                                        \
  template void fill<F>(F*, F, int64_t);                                                         \
  template void cast<F>(F*, const F*, int64_t);                                                  \
  template double sum_squares<F>(const F*, int64_t);                                             \
  template void xent_max<F>(F*, const F*, int64_t, int64_t, int64_t);                            \
  template void xent_sumexp<F>(F*, F*, const F*, const F*, const int32_t*, int64_t, int64_t,     \
                               int64_t, int64_t);                                                \
  template void xent_loss<F>(F*, const F*, const F*, const F*, int64_t);                         \
  template void xent_backward<F>(F*, const F*, const F*, const F*, const int32_t*, int64_t,      \
                                 int64_t, int64_t, int64_t, F);                                  \
  template void adamw<F>(F*, const F*, F*, F*, F*, int64_t, const AdamWStep&);

TRAINER_REF_INSTANTIATE(float)
TRAINER_REF_INSTANTIATE(double)

#undef TRAINER_REF_INSTANTIATE

}  // namespace trainer::ref
