// `trainer plan` end to end through the binary: the report, --json, --search (text and JSON
// agree on the layouts), --ops (the step's ops with their bytes, FLOPs and floors), the
// production recipes, and user errors (exit code 2, named values).
#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "tests/support/test_util.h"
#include "tests/support/trainer_binary.h"

using namespace trainer::testing;

namespace {

RunResult plan(const std::string& args) { return run_command(trainer_exe() + " plan " + args); }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("plan: report for a CPU recipe, as text and as JSON") {
  RunResult r = plan(source_dir() + "/configs/quickstart.yaml");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("on 1 rank of cpu") != std::string::npos);
  CHECK(r.output.find("memory per rank by pipeline stage") != std::string::npos);
  CHECK(r.output.find("activations by recomputation") != std::string::npos);
  CHECK(r.output.find("host transients (CPU path)") != std::string::npos);
  CHECK(r.output.find("time model: step") != std::string::npos);

  RunResult j = plan(source_dir() + "/configs/quickstart.yaml --set parallel.pipeline=2 --set parallel.data=2 "
                     "--set train.micro_batch=8 --set train.global_batch=16 --world 4 --json");
  CAPTURE(j.output);
  REQUIRE(j.exit_code == 0);
  CHECK(count(j.output, "\"stage\": ") == 2);
  CHECK(j.output.find("\"largest_rank_bytes\": ") != std::string::npos);
  CHECK(j.output.find("\"flops_per_step\": ") != std::string::npos);
  CHECK(j.output.find("\"schedule\": \"1f1b\"") != std::string::npos);
  CHECK(j.output.find("\"grad_reduce_dtype\": \"fp32\"") != std::string::npos);

  // bf16 gradient reductions: said in the text and the JSON, the bf16 copy of the gradients
  // (ZeRO 0: 2 bytes a parameter) counted as communication buffers, and its casts in --ops.
  const std::string data2 = source_dir() + "/configs/quickstart.yaml --set parallel.data=2 --set train.micro_batch=16 "
                                           "--world 2 --set parallel.grad_reduce_dtype=";
  RunResult f = plan(data2 + "fp32"), b = plan(data2 + "bf16");
  CAPTURE(b.output);
  REQUIRE(f.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(f.output.find("reduced over the data group in bf16") == std::string::npos);
  CHECK(b.output.find("; gradients reduced over the data group in bf16") != std::string::npos);
  CHECK(f.output.find("communication buffers                0 B") != std::string::npos);
  CHECK(b.output.find("communication buffers                0 B") == std::string::npos);
  CHECK(b.output.find("ZeRO staging (with the gradients' bf16 copies)") != std::string::npos);
  CHECK(plan(data2 + "bf16 --json").output.find("\"grad_reduce_dtype\": \"bf16\"") != std::string::npos);
  RunResult ops = plan(data2 + "bf16 --ops");
  CHECK(std::regex_search(ops.output, std::regex(R"( memory +cast +\(\d+\) f32 -> bf16)")));
  CHECK(std::regex_search(ops.output, std::regex(R"( memory +cast +\(\d+\) bf16 -> f32)")));
  CHECK(plan(data2 + "fp32 --ops").output.find("cast") == std::string::npos);
}

TEST_CASE("plan --ops: every op of the step with its bytes, FLOPs and roofline floor") {
  // quickstart: 4 layers, d_model 128, one micro-batch of 32 x 64, fp32 (its train.precision).
  const std::string recipe = source_dir() + "/configs/quickstart.yaml --device h200 --ops";
  RunResult r = plan(recipe);
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("stage 0 of 1: floor ") != std::string::npos);
  CHECK(std::regex_search(r.output, std::regex(R"( compute +matmul\+bias +M=2048 N=384 K=128 NT f32)")));
  // Each weight gradient's product carries its bias gradient (QKV, attention and MLP projections);
  // fc's rides on the MLP's dX below, so no bias_backward is left.
  CHECK(std::regex_search(r.output, std::regex(R"( +matmul\+dbias_a +M=384 N=128 K=2048 TN f32)")));
  CHECK(std::regex_search(r.output, std::regex(R"( +matmul\+dbias_a +M=128 N=128 K=2048 TN f32)")));
  CHECK(std::regex_search(r.output, std::regex(R"( +matmul\+dbias_a +M=128 N=512 K=2048 TN f32)")));
  CHECK(std::regex_search(r.output, std::regex(R"( +matmul +M=512 N=128 K=2048 TN f32)")));
  CHECK(r.output.find("bias_backward") == std::string::npos);
  // The MLP's dX carries the GELU's and fc's bias gradients: no separate gelu_backward.
  CHECK(std::regex_search(r.output, std::regex(R"( +matmul\+dgelu\+dbias +M=2048 N=512 K=128 NN f32)")));
  CHECK(r.output.find("gelu_backward") == std::string::npos);
  CHECK(std::regex_search(r.output, std::regex(R"( memory +adamw_many +all parameters)")));

  RunResult j = plan(recipe + " --json");
  CAPTURE(j.output);
  REQUIRE(j.exit_code == 0);
  // The QKV product, once per layer: out (2048, 384), a (2048, 128), b (384, 128) and the bias in
  // f32, and 2 M N K FLOPs; compute-bound at 67 TFLOP/s against 4.8 TB/s.
  const int64_t bytes = 4 * 4 * (2048 * 384 + 2048 * 128 + 384 * 128 + 384), flops = 4 * 2 * int64_t(2048) * 384 * 128;
  CHECK(j.output.find("\"op\": \"matmul+bias\", \"shape\": \"M=2048 N=384 K=128 NT f32\", \"calls\": 4, \"bytes\": " +
                      std::to_string(bytes) + ", \"flops\": " + std::to_string(flops) + ", ") != std::string::npos);
  CHECK(j.output.find("\"hbm_bytes_per_s\": 4.8e+12") != std::string::npos);
  CHECK(count(j.output, "\"bound\": \"compute\"") > 0);
  CHECK(count(j.output, "\"bound\": \"memory\"") > 0);

  RunResult both = plan(recipe + " --search");
  CHECK(both.exit_code == 2);
  CHECK(both.output.find("--ops lists the ops of one layout's step") != std::string::npos);
}

TEST_CASE("plan --ops --ceilings measured: floors against what an H200 reached, or a named refusal") {
  const std::string recipe = source_dir() + "/configs/quickstart.yaml --device h200 --ops";
  RunResult r = plan(recipe + " --set train.device=cuda --set train.precision=bf16 --ceilings measured");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("with the floor the H200's ceilings give them: 4300 GB/s (measured) and 790 TFLOP/s "
                      "(measured)") != std::string::npos);
  // Every row's floor is max(bytes / 4.3 TB/s, FLOPs / 790 TFLOP/s).
  RunResult j = plan(recipe + " --set train.device=cuda --set train.precision=bf16 --ceilings measured --json");
  CAPTURE(j.output);
  REQUIRE(j.exit_code == 0);
  CHECK(j.output.find("\"hbm_bytes_per_s\": 4.3e+12, \"bandwidth_source\": \"measured\", \"peak_flops\": 7.9e+14, "
                      "\"peak_source\": \"measured\"") != std::string::npos);
  const std::regex row(R"re("bytes": ([0-9.e+]+), "flops": ([0-9.e+]+), "floor_s": ([0-9.e+-]+))re");
  int rows = 0;
  for (auto it = std::sregex_iterator(j.output.begin(), j.output.end(), row); it != std::sregex_iterator(); ++it) {
    const double bytes = std::stod((*it)[1]), flops = std::stod((*it)[2]), floor = std::stod((*it)[3]);
    CHECK(floor == doctest::Approx(std::max(bytes / 4.3e12, flops / 7.9e14)).epsilon(1e-5));
    ++rows;
  }
  CHECK(rows > 10);
  // The data sheet stays the default, and the user's figures win over either table.
  CHECK(plan(recipe + " --set train.device=cuda --set train.precision=bf16").output.find("4800 GB/s (data sheet) and 989 TFLOP/s (data sheet)") !=
        std::string::npos);
  RunResult own = plan(source_dir() + "/configs/quickstart.yaml --device a100 --ops --ceilings measured --bandwidth 1500 "
                       "--set train.peak_tflops=250");
  CAPTURE(own.output);
  CHECK(own.exit_code == 0);
  CHECK(own.output.find("1500 GB/s (--bandwidth) and 250 TFLOP/s (train.peak_tflops)") != std::string::npos);

  // No measured figure for the device or precision: exit 2 naming it, never the data sheet's instead.
  RunResult a100 = plan(source_dir() + "/configs/quickstart.yaml --device a100 --ops --ceilings measured");
  CHECK(a100.exit_code == 2);
  CHECK(a100.output.find("--ceilings measured: no measured memory bandwidth is on record for 'A100'") !=
        std::string::npos);
  RunResult fp32 = plan(recipe + " --ceilings measured");
  CHECK(fp32.exit_code == 2);
  CHECK(fp32.output.find("no measured matrix rate is on record for 'H200' in fp32") != std::string::npos);
  RunResult bad = plan(recipe + " --ceilings roofline");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--ceilings roofline: valid: datasheet, measured") != std::string::npos);
  RunResult zero = plan(recipe + " --bandwidth 0");
  CHECK(zero.exit_code == 2);
  CHECK(zero.output.find("--bandwidth 0: the device memory bandwidth must be > 0 GB/s") != std::string::npos);
  for (const char* alone : {" --ceilings measured", " --bandwidth 3000"}) {
    RunResult r2 = plan(source_dir() + "/configs/quickstart.yaml --device h200" + alone);
    CAPTURE(alone);
    CHECK(r2.exit_code == 2);
    CHECK(r2.output.find("it sets the ceilings of --ops's floors; add --ops") != std::string::npos);
  }
}

TEST_CASE("plan: GPT-3 175B on 1024 A100s, report and search") {
  const std::string recipe = source_dir() + "/configs/gpt3-175b.yaml";
  RunResult r = plan(recipe + " --world 1024 --device a100");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("data 8 x tensor 8 x pipeline 16") != std::string::npos);
  CHECK(r.output.find("activations and compute weights bf16") != std::string::npos);
  CHECK(r.output.find(": fits") != std::string::npos);
  CHECK(r.output.find("host transients") == std::string::npos);  // GPU: NCCL, no host copies

  RunResult small = plan(recipe + " --world 1024 --device a100 --memory 8");
  CHECK(small.exit_code == 0);
  CHECK(small.output.find("DOES NOT FIT") != std::string::npos);

  RunResult s = plan(recipe + " --world 1024 --device a100 --search");
  CAPTURE(s.output);
  REQUIRE(s.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(s.output, m, std::regex("([0-9]+) valid layouts, ([0-9]+) fit")));
  const int n_layouts = std::stoi(m[1]);
  CHECK(n_layouts > 100);
  CHECK(std::stoi(m[2]) > 0);
  CHECK(std::regex_search(s.output, std::regex("\n  20  [0-9]+x[0-9]+x[0-9]+ ")));
  RunResult js = plan(recipe + " --world 1024 --device a100 --search --json");
  REQUIRE(js.exit_code == 0);
  CHECK(count(js.output, "{\"rank\": ") == n_layouts);
  CHECK(js.output.find("\"recipe_recompute\": \"block\"") != std::string::npos);

  RunResult t = plan(source_dir() + "/configs/model-1t.yaml --world 3072 --device h100 --search --top 5");
  CAPTURE(t.output);
  REQUIRE(t.exit_code == 0);
  CHECK(std::regex_search(t.output, std::regex("\n   5  [0-9]+x[0-9]+x[0-9]+ ")));
}

TEST_CASE("plan: user errors exit 2 and name the value") {
  const std::string quick = source_dir() + "/configs/quickstart.yaml";
  RunResult w = plan(quick + " --world 3");
  CHECK(w.exit_code == 2);
  CHECK(w.output.find("but the job has 3") != std::string::npos);
  RunResult d = plan(quick + " --device tpu");
  CHECK(d.exit_code == 2);
  CHECK(d.output.find("'tpu'") != std::string::npos);
  CHECK(d.output.find("a100, h100, h200, cpu") != std::string::npos);
  const std::string gpt3 = source_dir() + "/configs/gpt3-175b.yaml";
  RunResult nodev = plan(gpt3 + " --world 1024");
  CHECK(nodev.exit_code == 2);
  CHECK(nodev.output.find("--device") != std::string::npos);
  RunResult bf16 = plan(gpt3 + " --world 1024 --device cpu");
  CHECK(bf16.exit_code == 2);
  CHECK(bf16.output.find("bf16") != std::string::npos);
  RunResult none = plan(quick + " --world 7 --search --set train.micro_batch=8 --set train.global_batch=8");
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("no layout of 7 ranks") != std::string::npos);
}
