// The backend parity harness (ggml's tests/test-backend-ops.cpp, our way): a case is an op, the
// shapes, kinds and value ranges of its arguments and the tolerance of each output. For every
// case the harness fills the inputs with seeded random values rounded to the dtype the backend
// under test stores (so both sides see identical inputs), poisons every output with NaN on both
// backends, runs the op on the reference (the CPU backend, f32) and on the backend under test,
// checks that no output an op must write in full is left NaN, compares every output, then runs
// the op again on the backend under test and checks the outputs are bit-identical
// (determinism).
// Accumulated arguments (+=) start from the same random values on both sides. `prepare` lets a
// case derive inputs that must be consistent (layernorm's mean and rstd, attention's out and
// lse) by running ops on the reference first. No CUDA in here: tests/kernels runs the tables
// CPU against CPU to check the tables themselves; test_cuda runs them CPU against CUDA.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "tests/kernels/device_tensors.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

// output: poisoned with NaN, must be written in full; accumulated: read and written (+=,
// in-place ops), starts from random values; absent: an optional argument left undefined.
enum class Role : uint8_t { input, output, accumulated, absent };
// act: the backend's activation dtype (f32 on the reference); f32 and i32 on both.
enum class Kind : uint8_t { act, f32, i32 };
// close: |got - want| within the tolerance relative to the data's scale (check_close); exact:
// bit-identical to the reference rounded to the stored dtype.
enum class Compare : uint8_t { close, exact };

// Tolerance by the precision of the backend under test.
struct Tol {
  double fp32 = 0;
  double bf16 = 0;
};
constexpr Tol kTolAct{kTolF32, kTolBf16};  // outputs in the act dtype
constexpr Tol kTolSums{kTolSum, kTolSum};  // f32 sums of identical inputs (parameter gradients)
constexpr Tol kTolStats{kTolF32, kTolF32};

struct ParityArg {
  std::string name;
  Role role = Role::input;
  Kind kind = Kind::act;
  std::vector<int64_t> shape;
  float lo = -1, hi = 1;  // uniform floats in [lo, hi); integers in [lo, hi)
  Tol tol;
  Compare compare = Compare::close;
  std::vector<int32_t> fixed;  // i32 inputs with structure (document starts): these, not random
};

inline ParityArg input(std::string name, Kind kind, std::vector<int64_t> shape, float lo = -1, float hi = 1) {
  return {std::move(name), Role::input, kind, std::move(shape), lo, hi, Tol{}, Compare::close, {}};
}
inline ParityArg ints(std::string name, std::vector<int64_t> shape, int64_t hi) {
  return {std::move(name), Role::input, Kind::i32, std::move(shape), 0, float(hi), Tol{}, Compare::close, {}};
}
// An i32 input holding exactly `values` (e.g. document starts, which must not decrease).
inline ParityArg fixed_ints(std::string name, std::vector<int64_t> shape, std::vector<int32_t> values) {
  ParityArg a{std::move(name), Role::input, Kind::i32, std::move(shape), 0, 1, Tol{}, Compare::close, {}};
  a.fixed = std::move(values);
  return a;
}
inline ParityArg output(std::string name, Kind kind, std::vector<int64_t> shape, Tol tol,
                        Compare compare = Compare::close) {
  return {std::move(name), Role::output, kind, std::move(shape), -1, 1, tol, compare, {}};
}
inline ParityArg accumulated(std::string name, Kind kind, std::vector<int64_t> shape, Tol tol,
                             Compare compare = Compare::close, float lo = -1, float hi = 1) {
  return {std::move(name), Role::accumulated, kind, std::move(shape), lo, hi, tol, compare, {}};
}
inline ParityArg absent(std::string name) { return {std::move(name), Role::absent, Kind::act, {}, 0, 0, Tol{}, Compare::close, {}}; }

// The tensors of one side of a case, by argument name (undefined for an absent argument).
class ParityArgs {
 public:
  void set(const std::string& name, Tensor t) { tensors_[name] = t; }
  Tensor operator[](const std::string& name) const {
    auto it = tensors_.find(name);
    REQUIRE_MESSAGE(it != tensors_.end(), "no argument " << name << " in this case");
    return it->second;
  }

 private:
  std::map<std::string, Tensor> tensors_;
};

struct ParityCase {
  std::string label;
  std::vector<ParityArg> args;
  int64_t offset = 0;  // float tensors under test start this many elements into their buffers
  // Runs on the reference before anything is copied: may overwrite inputs (with `scratch`
  // for tensors it needs besides the case's).
  std::function<void(Backend& ref, const ParityArgs& t, Tensors& scratch)> prepare;
  std::function<void(Backend& backend, const ParityArgs& t)> run;
};

// A case from its label, arguments, op and offset (no prepare step).
inline ParityCase make_case(std::string label, std::vector<ParityArg> args,
                            std::function<void(Backend&, const ParityArgs&)> run, int64_t offset = 0) {
  ParityCase c;
  c.label = std::move(label);
  c.args = std::move(args);
  c.run = std::move(run);
  c.offset = offset;
  return c;
}

// FNV-1a: a seed per case label, the same on every platform.
inline uint64_t label_seed(const std::string& label) {
  uint64_t h = 1469598103934665603ull;
  for (char c : label) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h % 1000003;
}

// The values the backend under test stores for `values`.
inline std::vector<float> stored(const std::vector<float>& values, Kind kind, const Backend& dev) {
  return kind == Kind::act ? rounded(values, dev.act_dtype()) : values;
}

inline DType dtype_on(Kind kind, const Backend& backend) {
  return kind == Kind::act ? backend.act_dtype() : kind == Kind::f32 ? DType::f32 : DType::i32;
}

inline std::vector<int32_t> uniform_ints(size_t n, float lo, float hi, uint64_t seed) {
  const std::vector<float> u = random_floats(n, seed, 0.0f, 1.0f);
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int32_t(std::floor(lo + u[i] * (hi - lo)));
  for (int32_t& x : v) x = std::min(x, int32_t(hi) - 1);
  return v;
}

// One case: reference `ref` (the CPU backend) against `dev`.
inline void run_parity_case(Backend& ref, Backend& dev, const ParityCase& c) {
  INFO("case " << c.label << " on " << dev.name());
  const bool bf16 = dev.act_dtype() == DType::bf16;
  const uint64_t seed = label_seed(c.label);
  Tensors rt(ref), dt(dev), scratch(ref);
  ParityArgs rargs, dargs;
  std::vector<std::vector<float>> values(c.args.size());
  std::vector<std::vector<int32_t>> int_values(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ParityArg& a = c.args[i];
    if (a.role == Role::absent) {
      rargs.set(a.name, Tensor{});
      dargs.set(a.name, Tensor{});
      continue;
    }
    const size_t n = size_t(numel_of(a.shape));
    if (a.kind == Kind::i32) {
      REQUIRE(a.role == Role::input);
      int_values[i] = a.fixed.empty() ? uniform_ints(n, a.lo, a.hi, seed + i) : a.fixed;
      REQUIRE(int_values[i].size() == n);
      rargs.set(a.name, rt.upload_i32(int_values[i], a.shape));
      continue;
    }
    values[i] = a.role == Role::output ? std::vector<float>(n, NAN)
                                       : stored(random_floats(n, seed + i, a.lo, a.hi), a.kind, dev);
    rargs.set(a.name, rt.upload(values[i], DType::f32, a.shape));
  }
  if (c.prepare) {
    c.prepare(ref, rargs, scratch);
    // Inputs as the backend under test stores them, on both sides.
    for (size_t i = 0; i < c.args.size(); ++i)
      if (c.args[i].role == Role::input && c.args[i].kind != Kind::i32) {
        values[i] = stored(rt.read(rargs[c.args[i].name]), c.args[i].kind, dev);
        rt.write(rargs[c.args[i].name], values[i]);
      }
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ParityArg& a = c.args[i];
    if (a.role == Role::absent) continue;
    if (a.kind == Kind::i32)
      dargs.set(a.name, dt.upload_i32(int_values[i], a.shape));
    else
      dargs.set(a.name, dt.upload(values[i], dtype_on(a.kind, dev), a.shape, c.offset));
  }

  c.run(ref, rargs);
  c.run(dev, dargs);
  std::vector<std::vector<float>> first(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ParityArg& a = c.args[i];
    if (a.role != Role::output && a.role != Role::accumulated) continue;
    const std::vector<float> want = rt.read(rargs[a.name]);
    first[i] = dt.read(dargs[a.name]);
    const std::string what = c.label + ": " + a.name;
    if (a.role == Role::output) {
      size_t left = 0;
      for (float x : first[i]) left += std::isnan(x) ? 1 : 0;
      for (float x : want) left += std::isnan(x) ? 1 : 0;
      INFO(what << ": " << left << " elements left NaN (unwritten) by either backend");
      CHECK(left == 0);
    }
    if (a.compare == Compare::exact)
      check_equal(first[i], stored(want, a.kind, dev), what);
    else
      check_close(first[i], want, bf16 ? a.tol.bf16 : a.tol.fp32, what);
  }

  // Again from the same inputs: the backend under test must give the same bits.
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ParityArg& a = c.args[i];
    if (a.role == Role::output) dt.write(dargs[a.name], std::vector<float>(first[i].size(), NAN));
    if (a.role == Role::accumulated) dt.write(dargs[a.name], values[i]);
  }
  c.run(dev, dargs);
  for (size_t i = 0; i < c.args.size(); ++i)
    if (c.args[i].role == Role::output || c.args[i].role == Role::accumulated)
      check_equal(dt.read(dargs[c.args[i].name]), first[i], c.label + ": " + c.args[i].name + " rerun");
}

inline void run_parity(Backend& ref, Backend& dev, const std::vector<ParityCase>& cases) {
  for (const ParityCase& c : cases) run_parity_case(ref, dev, c);
}

}  // namespace trainer::testing
