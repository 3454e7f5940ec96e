// ArgCheck: how the front doors (backend_ops.cpp) check one op call: presence, device and
// dtype of each tensor argument, shapes, and at the end the aliasing rule of backend.h (an
// output overlaps no other argument unless it is exactly the same tensor in a declared
// in-place form). Internal to kernels/. Every op call passes through here, so a call that
// passes allocates nothing and formats no message; a failure is a TRAINER_CHECK whose message
// reads "<op>: <argument> <what is wrong>". It also counts the call's memory traffic for
// `trainer bench --profile` (bytes_moved).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/backend.h"
#include "kernels/base/check.h"

namespace trainer::op_check {

// What dtype an argument needs (see "dtypes" in backend.h).
// cast: f32, act or bf16 (cast alone takes bf16 on every backend: the gradient reduction's
// wire format, model/param_store.h).
enum class Want : uint8_t { act, f32, i32, float_any, cast };
enum class Role : uint8_t { in, out };
enum class Presence : uint8_t { required, optional };

inline std::string dims(int64_t r, int64_t c) { return "(" + std::to_string(r) + ", " + std::to_string(c) + ")"; }

// Checks the arguments of one op call and remembers them for the aliasing rule.
class ArgCheck {
 public:
  ArgCheck(const char* op, const Backend& backend) : op_(op), device_(backend.device()), act_(backend.act_dtype()) {}
  // A new check of the same op on the same backend: one piece of a multi-tensor op, whose
  // pieces each follow a single-tensor op's contract and aliasing rule.
  ArgCheck piece() const { return ArgCheck(op_, device_, act_); }

  // Presence, device and dtype of one argument. Returns whether it is defined.
  bool arg(const char* name, const Tensor& t, Want want, Role role, Presence presence = Presence::required) {
    if (!t.defined()) {
      that(presence == Presence::optional, name, "is undefined");
      return false;
    }
    that(t.device == device_, name,
         [&] { return std::string("lives on ") + device_name(t.device) + ", the backend on " + device_name(device_); });
    that(dtype_ok(t.dtype, want), name,
         [&] { return std::string("has dtype ") + dtype_name(t.dtype) + ", needs " + wanted(want); });
    TRAINER_CHECK(n_args_ < kMaxArgs, std::string(op_) + ": more tensor arguments than ArgCheck holds");
    args_[n_args_++] = {name, t, role};
    return true;
  }
  void same_dtype(const char* name, const Tensor& t, const char* other_name, const Tensor& other) {
    that(t.dtype == other.dtype, name, [&] {
      return std::string("has dtype ") + dtype_name(t.dtype) + ", needs " + other_name + "'s " + dtype_name(other.dtype);
    });
  }
  void matrix(const char* name, const Tensor& t, int64_t rows, int64_t cols) {
    that(matrix_rows(t) == rows && matrix_cols(t) == cols, name,
         [&] { return t.shape_str() + " should be " + dims(rows, cols); });
  }
  void exact(const char* name, const Tensor& t, int ndim, const char* what) {
    that(t.ndim == ndim, name, [&] { return t.shape_str() + " should be exactly " + what; });
  }
  // The output `name` (already passed to arg, and defined) is read as well as written
  // (accumulated, or updated in place): it moves twice in bytes_moved.
  void updates(const char* name) {
    bool found = false;
    for (int i = 0; i < n_args_; ++i)
      if (std::strcmp(args_[i].name, name) == 0) found = args_[i].read_too = true;
    TRAINER_CHECK(found, std::string(op_) + ": updates() names " + name + ", which is not a defined argument");
  }
  // What the call's arguments hold: every defined argument's bytes once (an input read, an
  // output written), an updated output twice, plus what absorbed pieces move. What an op
  // moves when it reads each argument once, in full: more where it reads one again (cache
  // misses), less where it touches only some rows of one (the encoder's gather from wte and
  // scatter into dwte, a KV cache's past rows).
  int64_t bytes_moved() const {
    int64_t n = pieces_bytes_;
    for (int i = 0; i < n_args_; ++i) n += int64_t(args_[i].t.bytes()) * (args_[i].read_too ? 2 : 1);
    return n;
  }
  // A checked piece of a multi-tensor op adds its traffic to this call's.
  void absorb(const ArgCheck& piece) { pieces_bytes_ += piece.bytes_moved(); }
  void numel(const char* name, const Tensor& t, int64_t n) {
    that(t.numel() == n, name, [&] { return t.shape_str() + " should have " + std::to_string(n) + " elements"; });
  }
  // The output `out` may be exactly the input `in` (an in-place form of the op).
  void in_place(const char* out, const char* in) {
    TRAINER_CHECK(n_in_place_ < kMaxInPlace, std::string(op_) + ": more in-place forms than ArgCheck holds");
    in_place_[n_in_place_++] = {out, in};
  }
  // "<op>: <name> <what()>" unless ok; `what` is a callable returning the rest of the message.
  template <class F>
  void that(bool ok, const char* name, F&& what) const {
    TRAINER_CHECK(ok, std::string(op_) + ": " + name + " " + what());
  }
  void that(bool ok, const char* name, const char* what) const {
    that(ok, name, [what] { return std::string(what); });
  }

  // The aliasing rule: an output overlaps no other argument unless it is exactly the same
  // tensor in a declared in-place form.
  void check_aliases() const {
    for (int i = 0; i < n_args_; ++i) {
      const Seen& w = args_[i];
      if (w.role != Role::out) continue;
      for (int j = 0; j < n_args_; ++j) {
        const Seen& x = args_[j];
        if (i == j || !overlap(w.t, x.t)) continue;
        const bool in_place = allowed(w.name, x.name);
        that(in_place && same_tensor(w.t, x.t), w.name, [&] {
          return std::string("overlaps ") + x.name + (in_place ? " (in place needs the same tensor)" : "");
        });
      }
    }
  }

 private:
  struct Seen {
    const char* name = nullptr;
    Tensor t;
    Role role = Role::in;
    bool read_too = false;  // an output that is also read (updates)
  };
  ArgCheck(const char* op, Device device, DType act) : op_(op), device_(device), act_(act) {}

  static constexpr int kMaxArgs = 10;  // attention_block_backward has the most
  static constexpr int kMaxInPlace = 2;

  bool dtype_ok(DType d, Want want) const {
    switch (want) {
      case Want::act: return d == act_;
      case Want::f32: return d == DType::f32;
      case Want::i32: return d == DType::i32;
      case Want::float_any: return d == DType::f32 || d == act_;
      case Want::cast: return d == DType::f32 || d == act_ || d == DType::bf16;
    }
    return false;
  }
  std::string wanted(Want want) const {
    switch (want) {
      case Want::act: return std::string(dtype_name(act_)) + " (act)";
      case Want::f32: return "f32";
      case Want::i32: return "i32";
      case Want::float_any: return act_ == DType::f32 ? "f32" : std::string("f32 or ") + dtype_name(act_);
      case Want::cast: return act_ == DType::f32 || act_ == DType::bf16 ? "f32 or bf16" : std::string("f32, bf16 or ") + dtype_name(act_);
    }
    return "?";
  }
  static bool overlap(const Tensor& a, const Tensor& b) {
    const char* pa = static_cast<const char*>(a.data);
    const char* pb = static_cast<const char*>(b.data);
    return a.bytes() > 0 && b.bytes() > 0 && pa < pb + b.bytes() && pb < pa + a.bytes();
  }
  static bool same_tensor(const Tensor& a, const Tensor& b) {
    return a.data == b.data && a.dtype == b.dtype && a.numel() == b.numel();
  }
  bool allowed(const char* out, const char* in) const {
    for (int i = 0; i < n_in_place_; ++i)
      if (std::strcmp(in_place_[i].first, out) == 0 && std::strcmp(in_place_[i].second, in) == 0) return true;
    return false;
  }

  const char* op_;
  Device device_;
  DType act_;
  std::array<Seen, kMaxArgs> args_{};
  int n_args_ = 0;
  std::array<std::pair<const char*, const char*>, kMaxInPlace> in_place_{};
  int n_in_place_ = 0;
  int64_t pieces_bytes_ = 0;
};

}  // namespace trainer::op_check
