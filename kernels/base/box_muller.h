// Four standard normals from one Philox block (Box-Muller on its two pairs of words), computed
// so that the host and a CUDA device give the same bits: weight init runs on whichever device
// holds the weights, and a CPU run and a GPU run of one seed must start from one model.
//
// Invariant: every floating-point step is one IEEE single-precision operation rounded to
// nearest (add, subtract, multiply, divide, square root) in a fixed order. Library log, sin
// and cos differ between glibc and CUDA in the last bits, so log and sincos here are our own
// polynomials; the uniform-to-angle reduction is exact integer arithmetic. On the device the
// operations are the __f*_rn intrinsics, which nvcc never fuses into an FMA; on the host the
// one translation unit that includes this file is compiled with -ffp-contract=off (CMake
// defines TRAINER_FP_CONTRACT_OFF there), and any other host inclusion is a compile error.
//
// Denormals never occur: the smallest intermediate is about 2^-100 and the smallest |normal|
// about 1e-10, so flush-to-zero settings (the CPU backend's, nvcc's -ftz) cannot change a bit.
//
// Accuracy against a double-precision Box-Muller of the same uniforms: below 1.7e-7 relative
// over every one of the 2^23 uniforms (tests/kernels/test_init_normal.cpp measures it and pins
// the bits).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/base/philox.h"

#if defined(__CUDACC__)
#define TRAINER_BM_FN __device__ __forceinline__
#else
#if !defined(TRAINER_FP_CONTRACT_OFF)
#error "box_muller.h on the host needs -ffp-contract=off (see its header comment)"
#endif
#if defined(__FAST_MATH__)
#error "box_muller.h on the host cannot be compiled with -ffast-math (it reassociates and uses reciprocals)"
#endif
#define TRAINER_BM_FN static inline
#endif

namespace trainer::box_muller {

#if defined(__CUDACC__)
TRAINER_BM_FN float add(float a, float b) { return __fadd_rn(a, b); }
TRAINER_BM_FN float sub(float a, float b) { return __fsub_rn(a, b); }
TRAINER_BM_FN float mul(float a, float b) { return __fmul_rn(a, b); }
TRAINER_BM_FN float div(float a, float b) { return __fdiv_rn(a, b); }
TRAINER_BM_FN float sqrt(float a) { return __fsqrt_rn(a); }
TRAINER_BM_FN uint32_t bits_of(float x) { return __float_as_uint(x); }
TRAINER_BM_FN float float_of(uint32_t u) { return __uint_as_float(u); }
#else
TRAINER_BM_FN float add(float a, float b) { return a + b; }
TRAINER_BM_FN float sub(float a, float b) { return a - b; }
TRAINER_BM_FN float mul(float a, float b) { return a * b; }
TRAINER_BM_FN float div(float a, float b) { return a / b; }
TRAINER_BM_FN float sqrt(float a) { return __builtin_sqrtf(a); }
TRAINER_BM_FN uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
TRAINER_BM_FN float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
#endif

// Uniform in (0, 1) from the top 23 bits of a word: (k + 0.5) / 2^23, exact in float, never
// 0 or 1.
TRAINER_BM_FN float uniform(uint32_t word) { return mul(add(float(int32_t(word >> 9)), 0.5f), 0x1p-23f); }

// Natural log of a positive normal float x < 2 (FreeBSD's e_logf.c without its special
// cases): x = 2^k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)), log(1 + f) = f - hfsq + s (hfsq
// + R(s^2)), s = f / (2 + f).
TRAINER_BM_FN float log(float x) {
  constexpr float kLn2Hi = 0x1.62e3p-1f, kLn2Lo = 0x1.2fefa2p-17f;
  constexpr float kLg1 = 0xaaaaaa.0p-24f, kLg2 = 0xccce13.0p-25f, kLg3 = 0x91e9ee.0p-25f, kLg4 = 0xf89e26.0p-26f;
  const uint32_t ix = bits_of(x);
  const uint32_t mant = ix & 0x7fffffu;
  const uint32_t half = (mant + 0x4afb20u) & 0x800000u;  // set when 1.mant is about sqrt(2) or more
  const int k = int(ix >> 23) - 127 + int(half >> 23);
  const float f = sub(float_of(mant | (half ^ 0x3f800000u)), 1.0f);
  const float s = div(f, add(2.0f, f));
  const float z = mul(s, s), w = mul(z, z);
  const float t1 = mul(w, add(kLg2, mul(w, kLg4)));
  const float t2 = mul(z, add(kLg1, mul(w, kLg3)));
  const float r = add(t2, t1);
  const float hfsq = mul(mul(0.5f, f), f);
  const float dk = float(k);
  return sub(mul(dk, kLn2Hi), sub(sub(hfsq, add(mul(s, add(hfsq, r)), mul(dk, kLn2Lo))), f));
}

struct SinCos {
  float sin, cos;
};

// sin and cos of 2 pi (k + 0.5) / 2^23 for 0 <= k < 2^23 (a uniform's angle). The quadrant
// q = round(4 v) and the remainder r = v - q / 4 in [-1/8, 1/8] come from k exactly; then
// Taylor polynomials in r of sin(2 pi r) and cos(2 pi r), whose first omitted terms are below
// 3e-9 at |r| = 1/8.
TRAINER_BM_FN SinCos sincos_turns(uint32_t k) {
  constexpr float kS1 = float(6.283185307179586), kS3 = float(-41.341702240399755), kS5 = float(81.60524927607504),
                  kS7 = float(-76.70585975306136), kS9 = float(42.058693944897634);
  constexpr float kC2 = float(-19.739208802178716), kC4 = float(64.93939402266828), kC6 = float(-85.45681720669371),
                  kC8 = float(60.24464137187664), kC10 = float(-26.426256783374388);
  const uint32_t q = (k + (1u << 20)) >> 21;  // 0..4
  const int32_t j = int32_t(k) - int32_t(q << 21);
  const float r = mul(add(float(j), 0.5f), 0x1p-23f);
  const float r2 = mul(r, r);
  const float s = mul(r, add(kS1, mul(r2, add(kS3, mul(r2, add(kS5, mul(r2, add(kS7, mul(r2, kS9)))))))));
  const float c =
      add(1.0f, mul(r2, add(kC2, mul(r2, add(kC4, mul(r2, add(kC6, mul(r2, add(kC8, mul(r2, kC10))))))))));
  switch (q & 3u) {
    case 0: return {s, c};
    case 1: return {c, -s};
    case 2: return {-s, -c};
    default: return {-c, s};
  }
}

struct Pair {
  float value[2];
};

// One Box-Muller pair: radius sqrt(-2 log u) from radius_word, angle 2 pi v from angle_word.
TRAINER_BM_FN Pair normal_pair(uint32_t radius_word, uint32_t angle_word) {
  const float a = sqrt(mul(-2.0f, log(uniform(radius_word))));
  const SinCos t = sincos_turns(angle_word >> 9);
  return {{mul(a, t.cos), mul(a, t.sin)}};
}

struct Normals {
  float value[4];
};

// Normals 4b .. 4b + 3 of the stream (key, stream): the pairs of words (0, 1) and (2, 3).
TRAINER_BM_FN Normals normal4(uint64_t key, uint64_t stream, uint64_t block) {
  const PhiloxBlock r = philox4x32_block(key, stream, block);
  const Pair p = normal_pair(r.word[0], r.word[1]), q = normal_pair(r.word[2], r.word[3]);
  return {{p.value[0], p.value[1], q.value[0], q.value[1]}};
}

}  // namespace trainer::box_muller

#undef TRAINER_BM_FN
