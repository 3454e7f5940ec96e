// AdamW's and the multi-tensor ops' contracts (backend_adamw_ops.h, backend_multi_tensor_ops.h),
// checked by the front doors of backend_ops.cpp like every other op's (op_checks.h). The
// overlap rule between pieces is checked by sorting the pieces' byte ranges (a few hundred per
// optimizer step), so it costs one small allocation per call, unlike the single-tensor front
// doors.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/op_checks.h"

namespace trainer::op_check {

namespace {

// One tensor of one piece, by its bytes.
struct Span {
  const char* begin;
  const char* end;
  size_t piece;
  const char* name;
  Role role;
};

void add_span(std::vector<Span>& spans, const Tensor& t, size_t piece, const char* name, Role role) {
  if (!t.defined() || t.bytes() == 0) return;
  const char* b = static_cast<const char*>(t.data);
  spans.push_back({b, b + t.bytes(), piece, name, role});
}

// An output of one piece overlaps no tensor of another piece.
void check_pieces_apart(std::vector<Span>& spans, const ArgCheck& k) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < spans.size(); ++i)
    for (size_t j = i + 1; j < spans.size() && spans[j].begin < spans[i].end; ++j) {
      const Span &a = spans[i], &b = spans[j];
      if (a.piece == b.piece || (a.role == Role::in && b.role == Role::in)) continue;
      const Span& out = a.role == Role::out ? a : b;
      const Span& other = a.role == Role::out ? b : a;
      k.that(false, out.name, [&] {
        return "of piece " + std::to_string(out.piece) + " overlaps " + other.name + " of piece " +
               std::to_string(other.piece);
      });
    }
}

}  // namespace

void check(const AdamWOp& op, ArgCheck& k) {
  k.arg("param", op.param, Want::f32, Role::out);
  k.arg("grad", op.grad, Want::f32, Role::in);
  k.arg("m", op.m, Want::f32, Role::out);
  k.arg("v", op.v, Want::f32, Role::out);
  const bool copy = k.arg("param_copy", op.param_copy, Want::act, Role::out, Presence::optional);
  k.updates("param");
  k.updates("m");
  k.updates("v");
  const int64_t n = op.param.numel();
  k.numel("grad", op.grad, n);
  k.numel("m", op.m, n);
  k.numel("v", op.v, n);
  if (copy) k.numel("param_copy", op.param_copy, n);
  k.that(op.h.step >= 1, "step", [&] { return "is 1-based, got " + std::to_string(op.h.step); });
}

void check(const AdamWManyOp& op, ArgCheck& k) {
  std::vector<Span> spans;
  spans.reserve(op.pieces.size() * 5);
  for (size_t i = 0; i < op.pieces.size(); ++i) {
    const AdamWOp& p = op.pieces[i];
    ArgCheck pk = k.piece();
    check(p, pk);
    pk.check_aliases();
    k.absorb(pk);
    const AdamWStep &h = p.h, &h0 = op.pieces[0].h;
    const bool shared = h.lr == h0.lr && h.beta1 == h0.beta1 && h.beta2 == h0.beta2 && h.eps == h0.eps &&
                        h.grad_scale == h0.grad_scale && h.step == h0.step;
    k.that(shared, "h", [&] {
      return "of piece " + std::to_string(i) +
             " differs from piece 0's in lr, beta1, beta2, eps, grad_scale or step (one optimizer step)";
    });
    add_span(spans, p.param, i, "param", Role::out);
    add_span(spans, p.grad, i, "grad", Role::in);
    add_span(spans, p.m, i, "m", Role::out);
    add_span(spans, p.v, i, "v", Role::out);
    add_span(spans, p.param_copy, i, "param_copy", Role::out);
  }
  check_pieces_apart(spans, k);
}

void check(const SumSquaresManyOp& op, ArgCheck& k) {
  for (size_t i = 0; i < op.xs.size(); ++i) {
    ArgCheck pk = k.piece();
    pk.arg("xs", op.xs[i], Want::float_any, Role::in);
    k.absorb(pk);
    k.that(op.xs[i].dtype == op.xs[0].dtype, "xs", [&] {
      return std::string("[") + std::to_string(i) + "] has dtype " + dtype_name(op.xs[i].dtype) + ", xs[0] " +
             dtype_name(op.xs[0].dtype) + " (one dtype for all)";
    });
  }
}

}  // namespace trainer::op_check
