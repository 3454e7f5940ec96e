// Reference loops for the Llama ops (see reference_ops.h): RMSNorm, per-head RMSNorm, rotary
// embedding and SwiGLU, literal definitions in F, single thread. Instantiated for float and
// double at the end of the file.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/reference_ops.h"

namespace trainer::ref {

namespace {

template <class F>
F rms_one(F* y, const F* x, const F* w, int64_t C, F eps) {
  F ss = 0;
  for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
  const F r = F(1) / std::sqrt(ss / F(C) + eps);
  for (int64_t c = 0; c < C; ++c) y[c] = x[c] * r * w[c];
  return r;
}

// dx per mode; dw += dy * x * r.
template <class F>
void rms_one_backward(F* dx, F* dw, const F* dy, const F* x, const F* w, F r, int64_t C, Accumulate mode) {
  F dot = 0;
  for (int64_t c = 0; c < C; ++c) dot += w[c] * dy[c] * x[c];
  for (int64_t c = 0; c < C; ++c) {
    const F g = r * (w[c] * dy[c] - x[c] * r * r * dot / F(C));
    dx[c] = mode == Accumulate::add ? dx[c] + g : g;
    dw[c] += dy[c] * x[c] * r;
  }
}

template <class F>
F sigmoid(F x) {
  return F(1) / (F(1) + std::exp(-x));
}

}  // namespace

template <class F>
void rmsnorm_forward(F* out, F* rstd, const F* inp, const F* weight, int64_t N, int64_t C, F eps) {
  for (int64_t n = 0; n < N; ++n) rstd[n] = rms_one(out + n * C, inp + n * C, weight, C, eps);
}

template <class F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight, const F* rstd,
                      int64_t N, int64_t C, Accumulate dinp_mode) {
  for (int64_t n = 0; n < N; ++n)
    rms_one_backward(dinp + n * C, dweight, dout + n * C, inp + n * C, weight, rstd[n], C, dinp_mode);
}

template <class F>
void head_rmsnorm_forward(F* out, F* rstd, const F* inp, const F* q_weight, const F* k_weight, int64_t rows,
                          int64_t H, int64_t Hkv, int64_t D, F eps) {
  const int64_t W = (H + 2 * Hkv) * D;
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t h = 0; h < H + Hkv; ++h)
      rstd[n * (H + Hkv) + h] = rms_one(out + n * W + h * D, inp + n * W + h * D, h < H ? q_weight : k_weight, D, eps);
    for (int64_t c = (H + Hkv) * D; c < W; ++c) out[n * W + c] = inp[n * W + c];
  }
}

template <class F>
void head_rmsnorm_backward(F* dinp, F* dq_weight, F* dk_weight, const F* dout, const F* inp, const F* q_weight,
                           const F* k_weight, const F* rstd, int64_t rows, int64_t H, int64_t Hkv, int64_t D) {
  const int64_t W = (H + 2 * Hkv) * D;
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t h = 0; h < H + Hkv; ++h)
      rms_one_backward(dinp + n * W + h * D, h < H ? dq_weight : dk_weight, dout + n * W + h * D,
                       inp + n * W + h * D, h < H ? q_weight : k_weight, rstd[n * (H + Hkv) + h], D,
                       Accumulate::overwrite);
    for (int64_t c = (H + Hkv) * D; c < W; ++c) dinp[n * W + c] = dout[n * W + c];
  }
}

template <class F>
void rope(F* out, const F* inp, const float* inv_freq, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
          int64_t pos_offset, int direction) {
  const int64_t W = (H + 2 * Hkv) * D, half = D / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const F* x = inp + (b * T + t) * W;
      F* y = out + (b * T + t) * W;
      for (int64_t h = 0; h < H + Hkv; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const float angle = float(pos_offset + t) * inv_freq[i];
          const F c = F(std::cos(angle)), s = F(direction) * F(std::sin(angle));
          const F a = x[h * D + i], e = x[h * D + i + half];
          y[h * D + i] = a * c - e * s;
          y[h * D + i + half] = e * c + a * s;
        }
      for (int64_t c = (H + Hkv) * D; c < W; ++c) y[c] = x[c];
    }
}

template <class F>
void swiglu_forward(F* out, const F* inp, int64_t N, int64_t Fw) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < Fw; ++i) {
      const F g = inp[n * 2 * Fw + i], u = inp[n * 2 * Fw + Fw + i];
      out[n * Fw + i] = g * sigmoid(g) * u;
    }
}

template <class F>
void swiglu_backward(F* dinp, const F* inp, const F* dout, int64_t N, int64_t Fw) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < Fw; ++i) {
      const F g = inp[n * 2 * Fw + i], u = inp[n * 2 * Fw + Fw + i], d = dout[n * Fw + i];
      const F s = sigmoid(g);
      dinp[n * 2 * Fw + i] = d * u * s * (F(1) + g * (F(1) - s));
      dinp[n * 2 * Fw + Fw + i] = d * g * s;
    }
}

#define TRAINER_REF_LLAMA_INSTANTIATE(F)                                                                       \
  template void rmsnorm_forward<F>(F*, F*, const F*, const F*, int64_t, int64_t, F);                           \
  template void rmsnorm_backward<F>(F*, F*, const F*, const F*, const F*, const F*, int64_t, int64_t,          \
                                    Accumulate);                                                               \
  template void head_rmsnorm_forward<F>(F*, F*, const F*, const F*, const F*, int64_t, int64_t, int64_t,       \
                                        int64_t, F);                                                           \
  template void head_rmsnorm_backward<F>(F*, F*, F*, const F*, const F*, const F*, const F*, const F*, int64_t, \
                                         int64_t, int64_t, int64_t);                                           \
  template void rope<F>(F*, const F*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int); \
  template void swiglu_forward<F>(F*, const F*, int64_t, int64_t);                                             \
  template void swiglu_backward<F>(F*, const F*, const F*, int64_t, int64_t);

TRAINER_REF_LLAMA_INSTANTIATE(float)
TRAINER_REF_LLAMA_INSTANTIATE(double)

#undef TRAINER_REF_LLAMA_INSTANTIATE

}  // namespace trainer::ref
