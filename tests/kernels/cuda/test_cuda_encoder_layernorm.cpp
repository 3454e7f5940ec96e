// CUDA encoder and LayerNorm, forward and backward, against the CPU backend. The backward
// passes are also run twice to check they are bit-for-bit deterministic.
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("encoder forward and backward match the CPU") {
  struct Shape {
    int64_t B, T, C, Vl, vocab_start, vocab_total;
    bool wpe;
  };
  const Shape shapes[] = {{2, 5, 8, 11, 0, 11, true},   {3, 7, 13, 9, 4, 20, true},
                          {2, 33, 40, 50, 0, 50, false}, {4, 64, 64, 7, 0, 7, true},
                          {2, 600, 24, 30, 0, 30, true}};
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (const Shape& s : shapes) {
      CAPTURE(rig.label);
      CAPTURE(s.B);
      CAPTURE(s.T);
      CAPTURE(s.C);
      CAPTURE(s.vocab_start);
      Tensors cpu(*rig.cpu), gpu(*rig.gpu);
      const auto tokens = random_tokens(s.B * s.T, int32_t(s.vocab_total), 51 + s.T);
      const auto wte = rounded(random_floats(s.Vl * s.C, 52), rig.act);
      const auto wpe = rounded(random_floats(s.T * s.C, 53), rig.act);
      const auto dout = rounded(random_floats(s.B * s.T * s.C, 54), rig.act);
      const auto dwte0 = random_floats(s.Vl * s.C, 55);
      const auto dwpe0 = random_floats(s.T * s.C, 56);

      Tensor ctok = cpu.upload_i32(tokens, {s.B, s.T});
      Tensor cwpe = s.wpe ? cpu.upload(wpe, DType::f32, {s.T, s.C}) : Tensor{};
      Tensor cout = cpu.alloc(DType::f32, {s.B, s.T, s.C});
      rig.cpu->encoder_forward(cout, ctok, cpu.upload(wte, DType::f32, {s.Vl, s.C}), cwpe, s.vocab_start);
      Tensor cdwte = cpu.upload(dwte0, DType::f32, {s.Vl, s.C});
      Tensor cdwpe = s.wpe ? cpu.upload(dwpe0, DType::f32, {s.T, s.C}) : Tensor{};
      rig.cpu->encoder_backward(cdwte, cdwpe, cpu.upload(dout, DType::f32, {s.B, s.T, s.C}), ctok, s.vocab_start);

      Tensor gtok = gpu.upload_i32(tokens, {s.B, s.T});
      Tensor gwpe = s.wpe ? gpu.upload(wpe, rig.act, {s.T, s.C}) : Tensor{};
      Tensor gout = gpu.poisoned(rig.act, {s.B, s.T, s.C});
      rig.gpu->encoder_forward(gout, gtok, gpu.upload(wte, rig.act, {s.Vl, s.C}), gwpe, s.vocab_start);
      check_close(gpu.read(gout), cpu.read(cout), rig.tol, "encoder_forward");

      Tensor gdout = gpu.upload(dout, rig.act, {s.B, s.T, s.C});
      Tensor gdwte = gpu.upload(dwte0, DType::f32, {s.Vl, s.C});
      Tensor gdwpe = s.wpe ? gpu.upload(dwpe0, DType::f32, {s.T, s.C}) : Tensor{};
      rig.gpu->encoder_backward(gdwte, gdwpe, gdout, gtok, s.vocab_start);
      const auto dwte1 = gpu.read(gdwte);
      check_close(dwte1, cpu.read(cdwte), kTolSum, "encoder_backward dwte");
      if (s.wpe) check_close(gpu.read(gdwpe), cpu.read(cdwpe), kTolSum, "encoder_backward dwpe");

      gpu.write(gdwte, dwte0);
      rig.gpu->encoder_backward(gdwte, Tensor{}, gdout, gtok, s.vocab_start);
      check_equal(gpu.read(gdwte), dwte1, "encoder_backward rerun");
    }
  }
}

TEST_CASE("layernorm forward and backward match the CPU") {
  struct Shape {
    int64_t N, C;
  };
  const Shape shapes[] = {{1, 1}, {5, 7}, {3, 8}, {37, 768}, {16, 1600}, {70, 33}};
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (const Shape& s : shapes)
      for (Accumulate mode : {Accumulate::overwrite, Accumulate::add}) {
        CAPTURE(rig.label);
        CAPTURE(s.N);
        CAPTURE(s.C);
        CAPTURE(int(mode));
        Tensors cpu(*rig.cpu), gpu(*rig.gpu);
        const auto x = rounded(random_floats(s.N * s.C, 61 + s.C, -2.0f, 3.0f), rig.act);
        const auto w = rounded(random_floats(s.C, 62, 0.5f, 1.5f), rig.act);
        const auto b = rounded(random_floats(s.C, 63), rig.act);
        const auto dout = rounded(random_floats(s.N * s.C, 64), rig.act);
        const auto dinp0 = rounded(random_floats(s.N * s.C, 65), rig.act);
        const auto dw0 = random_floats(s.C, 66);
        const auto db0 = random_floats(s.C, 67);

        Tensor cx = cpu.upload(x, DType::f32, {s.N, s.C}), cw = cpu.upload(w, DType::f32, {s.C});
        Tensor cout = cpu.alloc(DType::f32, {s.N, s.C});
        Tensor cmean = cpu.alloc(DType::f32, {s.N}), crstd = cpu.alloc(DType::f32, {s.N});
        rig.cpu->layernorm_forward(cout, cmean, crstd, cx, cw, cpu.upload(b, DType::f32, {s.C}));
        Tensor cdinp = cpu.upload(dinp0, DType::f32, {s.N, s.C});
        Tensor cdw = cpu.upload(dw0, DType::f32, {s.C}), cdb = cpu.upload(db0, DType::f32, {s.C});
        rig.cpu->layernorm_backward(cdinp, cdw, cdb, cpu.upload(dout, DType::f32, {s.N, s.C}), cx, cw, cmean, crstd,
                                    mode);

        Tensor gx = gpu.upload(x, rig.act, {s.N, s.C}), gw = gpu.upload(w, rig.act, {s.C});
        Tensor gout = gpu.poisoned(rig.act, {s.N, s.C});
        Tensor gmean = gpu.poisoned(DType::f32, {s.N}), grstd = gpu.poisoned(DType::f32, {s.N});
        rig.gpu->layernorm_forward(gout, gmean, grstd, gx, gw, gpu.upload(b, rig.act, {s.C}));
        check_close(gpu.read(gout), cpu.read(cout), rig.tol, "layernorm_forward out");
        check_close(gpu.read(gmean), cpu.read(cmean), kTolF32, "layernorm_forward mean");
        check_close(gpu.read(grstd), cpu.read(crstd), kTolF32, "layernorm_forward rstd");

        // Backward from the CPU's statistics, so both sides see identical inputs.
        const auto mean = cpu.read(cmean), rstd = cpu.read(crstd);
        Tensor gm = gpu.upload(mean, DType::f32, {s.N}), gr = gpu.upload(rstd, DType::f32, {s.N});
        Tensor gdout = gpu.upload(dout, rig.act, {s.N, s.C});
        Tensor gdinp = mode == Accumulate::add ? gpu.upload(dinp0, rig.act, {s.N, s.C}) : gpu.poisoned(rig.act, {s.N, s.C});
        Tensor gdw = gpu.upload(dw0, DType::f32, {s.C}), gdb = gpu.upload(db0, DType::f32, {s.C});
        rig.gpu->layernorm_backward(gdinp, gdw, gdb, gdout, gx, gw, gm, gr, mode);
        check_close(gpu.read(gdinp), cpu.read(cdinp), rig.tol, "layernorm_backward dinp");
        const auto dw1 = gpu.read(gdw), db1 = gpu.read(gdb);
        check_close(dw1, cpu.read(cdw), kTolSum, "layernorm_backward dweight");
        check_close(db1, cpu.read(cdb), kTolSum, "layernorm_backward dbias");

        gpu.write(gdw, dw0);
        gpu.write(gdb, db0);
        rig.gpu->layernorm_backward(gdinp, gdw, gdb, gdout, gx, gw, gm, gr, Accumulate::overwrite);
        check_equal(gpu.read(gdw), dw1, "layernorm_backward dweight rerun");
        check_equal(gpu.read(gdb), db1, "layernorm_backward dbias rerun");
      }
  }
}

TEST_CASE("layernorm backward allows dinp to alias dout") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    const int64_t N = 70, C = 96;
    Tensors cpu(*rig.cpu), gpu(*rig.gpu);
    const auto x = rounded(random_floats(N * C, 71), rig.act);
    const auto w = rounded(random_floats(C, 72), rig.act);
    const auto dout = rounded(random_floats(N * C, 73), rig.act);
    Tensor cx = cpu.upload(x, DType::f32, {N, C}), cw = cpu.upload(w, DType::f32, {C});
    Tensor cmean = cpu.alloc(DType::f32, {N}), crstd = cpu.alloc(DType::f32, {N});
    rig.cpu->layernorm_forward(cpu.alloc(DType::f32, {N, C}), cmean, crstd, cx, cw, cpu.upload(w, DType::f32, {C}));
    Tensor cdinp = cpu.alloc(DType::f32, {N, C});
    Tensor cdw = cpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    Tensor cdb = cpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.cpu->layernorm_backward(cdinp, cdw, cdb, cpu.upload(dout, DType::f32, {N, C}), cx, cw, cmean, crstd,
                                Accumulate::overwrite);
    Tensor gd = gpu.upload(dout, rig.act, {N, C});
    Tensor gdw = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    Tensor gdb = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.gpu->layernorm_backward(gd, gdw, gdb, gd, gpu.upload(x, rig.act, {N, C}), gpu.upload(w, rig.act, {C}),
                                gpu.upload(cpu.read(cmean), DType::f32, {N}), gpu.upload(cpu.read(crstd), DType::f32, {N}),
                                Accumulate::overwrite);
    check_close(gpu.read(gd), cpu.read(cdinp), rig.tol, "aliased dinp");
    check_close(gpu.read(gdw), cpu.read(cdw), kTolSum, "aliased dweight");
    check_close(gpu.read(gdb), cpu.read(cdb), kTolSum, "aliased dbias");
  }
}

}  // namespace
}  // namespace trainer::testing
