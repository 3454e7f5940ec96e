// MFU peaks by device name (app/plan/flops.h): the driver's names of real GPUs map to their dense
// bf16 or fp32 data-sheet figures, an unknown GPU says so instead of guessing, the recipe's
// override wins, and the CPU keeps its per-thread figure; memory bandwidths by the same names, and
// the roofline floor that plan --ops and bench --profile read ops against, from the data sheet,
// the measured ceilings or the user's figures.
#include <doctest/doctest.h>
#include <omp.h>

#include <string>
#include <tuple>
#include <utility>

#include "app/plan/flops.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

TEST_CASE("peaks come from the GPU's own name and the precision") {
  struct Case {
    const char* name;
    DType dtype;
    double tflops;
    PeakKind kind;
  };
  const Case cases[] = {
      {"NVIDIA A100-SXM4-80GB", DType::bf16, 312, PeakKind::bf16_dense},
      {"NVIDIA A100-SXM4-40GB", DType::f32, 19.5, PeakKind::fp32},
      {"NVIDIA A100 80GB PCIe", DType::bf16, 312, PeakKind::bf16_dense},
      {"NVIDIA H100 80GB HBM3", DType::bf16, 989, PeakKind::bf16_dense},
      {"NVIDIA H100 80GB HBM3", DType::f32, 67, PeakKind::fp32},
      {"NVIDIA H100 PCIe", DType::bf16, 756, PeakKind::bf16_dense},
      {"NVIDIA H100 NVL", DType::bf16, 835, PeakKind::bf16_dense},
      {"NVIDIA H200", DType::bf16, 989, PeakKind::bf16_dense},
      {"NVIDIA H200", DType::f32, 67, PeakKind::fp32},
      {"NVIDIA H200 NVL", DType::bf16, 835, PeakKind::bf16_dense},
      {"NVIDIA GH200 480GB", DType::bf16, 989, PeakKind::bf16_dense},
      {"NVIDIA L40S", DType::bf16, 362, PeakKind::bf16_dense},
      {"NVIDIA L4", DType::bf16, 121, PeakKind::bf16_dense},
      {"NVIDIA A10", DType::bf16, 125, PeakKind::bf16_dense},
      {"H100", DType::bf16, 989, PeakKind::bf16_dense},  // the planner's device names
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const DevicePeak p = device_peak(Device::cuda, c.name, c.dtype, 0);
    CHECK(p.kind == c.kind);
    CHECK(p.flops == doctest::Approx(c.tflops * 1e12));
    CHECK(p.describe().find(c.name) != std::string::npos);
  }
}

TEST_CASE("an unknown GPU has an unknown peak and no MFU, never a guess") {
  for (const char* name : {"NVIDIA GeForce RTX 4090", "NVIDIA A1000", "NVIDIA H1000", "Tesla V100-SXM2-16GB", ""}) {
    CAPTURE(name);
    const DevicePeak p = device_peak(Device::cuda, name, DType::bf16, 0);
    CHECK(p.kind == PeakKind::unknown);
    CHECK(p.flops == 0);
    CHECK(mfu_of(1e15, p) < 0);
    CHECK(p.describe().find("unknown peak") != std::string::npos);
  }
}

TEST_CASE("memory bandwidths come from the GPU's own name, none for the CPU or an unknown GPU") {
  const std::pair<const char*, double> cases[] = {
      {"NVIDIA A100-SXM4-80GB", 2.039}, {"NVIDIA A100-SXM4-40GB", 1.555}, {"NVIDIA A100-PCIE-40GB", 1.555},
      {"NVIDIA A100 80GB PCIe", 1.935}, {"NVIDIA H100 80GB HBM3", 3.35},  {"NVIDIA H100 PCIe", 2.0},
      {"NVIDIA H100 NVL", 3.9},         {"NVIDIA H200", 4.8},             {"NVIDIA H200 NVL", 4.8},
      {"NVIDIA GH200 480GB", 4.0},      {"NVIDIA L40S", 0.864},           {"NVIDIA L4", 0.3},
      {"NVIDIA A10", 0.6},              {"H200", 4.8},  // the planner's device names
  };
  for (const auto& [name, tbs] : cases) {
    CAPTURE(name);
    CHECK(device_memory_bandwidth(Device::cuda, name) == doctest::Approx(tbs * 1e12));
  }
  for (const char* name : {"NVIDIA GeForce RTX 4090", "NVIDIA A1000", "Tesla V100-SXM2-16GB", ""})
    CHECK(device_memory_bandwidth(Device::cuda, name) == 0);
  CHECK(device_memory_bandwidth(Device::cpu, "NVIDIA H200") == 0);
  // The variant word matches in any case, as the driver spells it: "PCIE" is the PCIe part.
  CHECK(device_peak(Device::cuda, "NVIDIA H100 PCIE", DType::bf16, 0).flops == doctest::Approx(756e12));
}

TEST_CASE("a roofline floor is the larger of the memory and compute terms") {
  const Roofline roof{4e12, 1e15};
  CHECK(roof.known());
  CHECK(roof.floor_s(8e9, 1e12) == doctest::Approx(2e-3));  // memory-bound: 8 GB at 4 TB/s
  CHECK_FALSE(roof.compute_bound(8e9, 1e12));
  CHECK(roof.floor_s(4e9, 3e12) == doctest::Approx(3e-3));  // compute-bound: 3 TFLOP at 1 PFLOP/s
  CHECK(roof.compute_bound(4e9, 3e12));
  CHECK_FALSE(Roofline{0, 1e15}.known());
  CHECK_FALSE(Roofline{4e12, 0}.known());
}

TEST_CASE("a roofline reads against the data sheet, the measured ceilings or the user's figures") {
  // The data sheet's: the same figures as the peak and bandwidth tables.
  const RooflineChoice sheet = roofline_for(Device::cuda, "NVIDIA H200", DType::bf16, Ceilings::datasheet, 0, 0);
  CHECK(sheet.roof.bytes_per_s == doctest::Approx(4.8e12));
  CHECK(sheet.roof.flops_per_s == doctest::Approx(989e12));
  CHECK(sheet.describe() == "4800 GB/s (data sheet) and 989 TFLOP/s (data sheet)");
  // Measured on the device: an H200 (SXM) or an H100 SXM, in bf16 only.
  const RooflineChoice measured = roofline_for(Device::cuda, "NVIDIA H200", DType::bf16, Ceilings::measured, 0, 0);
  CHECK(measured.roof.bytes_per_s == doctest::Approx(4.3e12));
  CHECK(measured.roof.flops_per_s == doctest::Approx(790e12));
  CHECK(measured.describe() == "4300 GB/s (measured) and 790 TFLOP/s (measured)");
  CHECK(roofline_for(Device::cuda, "H200", DType::bf16, Ceilings::measured, 0, 0).roof.flops_per_s ==
        doctest::Approx(790e12));
  // And an H100 SXM; its PCIe part keeps only the data sheet's.
  CHECK(roofline_for(Device::cuda, "NVIDIA H100 80GB HBM3", DType::bf16, Ceilings::measured, 0, 0).describe() ==
        "3000 GB/s (measured) and 798 TFLOP/s (measured)");
  // No measured figure falls back to the data sheet's: each gap is a user error naming the device.
  for (const auto& [device, name, dtype] :
       {std::tuple{Device::cuda, "NVIDIA H200 NVL", DType::bf16}, std::tuple{Device::cuda, "NVIDIA H100 PCIe", DType::bf16},
        std::tuple{Device::cuda, "NVIDIA H200", DType::f32}, std::tuple{Device::cpu, "AMD EPYC", DType::f32},
        std::tuple{Device::cuda, "NVIDIA GeForce RTX 4090", DType::bf16}}) {
    CAPTURE(name);
    const std::string needle = std::string("is on record for '") + name + "'";
    CHECK_THROWS_WITH_AS(roofline_for(device, name, dtype, Ceilings::measured, 0, 0),
                         doctest::Contains(needle.c_str()), ConfigError);
  }
  // The user's figures win over either table, and then nothing measured is needed.
  const RooflineChoice given =
      roofline_for(Device::cuda, "NVIDIA H100 80GB HBM3", DType::bf16, Ceilings::measured, 3e12, 700);
  CHECK(given.roof.bytes_per_s == doctest::Approx(3e12));
  CHECK(given.roof.flops_per_s == doctest::Approx(700e12));
  CHECK(given.describe() == "3000 GB/s (--bandwidth) and 700 TFLOP/s (train.peak_tflops)");
  CHECK(roofline_for(Device::cpu, "AMD EPYC", DType::f32, Ceilings::datasheet, 12345e9, 0.25).describe() ==
        "12345 GB/s (--bandwidth) and 0.25 TFLOP/s (train.peak_tflops)");
  // The H200's measured bandwidth with the user's rate for fp32.
  const RooflineChoice mixed = roofline_for(Device::cuda, "NVIDIA H200", DType::f32, Ceilings::measured, 0, 60);
  CHECK(mixed.describe() == "4300 GB/s (measured) and 60 TFLOP/s (train.peak_tflops)");
  // A CPU has no bandwidth on any table, and an unknown GPU neither figure.
  const RooflineChoice cpu = roofline_for(Device::cpu, "AMD EPYC", DType::f32, Ceilings::datasheet, 0, 0);
  CHECK(cpu.roof.bytes_per_s == 0);
  CHECK_FALSE(cpu.roof.known());
  CHECK(cpu.describe().rfind("unknown GB/s and ", 0) == 0);
  CHECK(roofline_for(Device::cuda, "NVIDIA GeForce RTX 4090", DType::bf16, Ceilings::datasheet, 0, 0).describe() ==
        "unknown GB/s and unknown TFLOP/s");
}

TEST_CASE("train.peak_tflops overrides the table and the CPU counts its threads") {
  const DevicePeak forced = device_peak(Device::cuda, "NVIDIA GeForce RTX 4090", DType::bf16, 165);
  CHECK(forced.kind == PeakKind::recipe);
  CHECK(forced.flops == doctest::Approx(165e12));
  CHECK(mfu_of(82.5e12, forced) == doctest::Approx(0.5));

  const DevicePeak cpu = device_peak(Device::cpu, "AMD EPYC", DType::f32, 0);
  CHECK(cpu.kind == PeakKind::cpu_fp32);
  CHECK(cpu.flops == doctest::Approx(0.25e12 * omp_get_max_threads()));
}

}  // namespace
}  // namespace trainer

namespace trainer {
namespace {

// SmolLM2-135M's shape by hand: per block the norms 2C, q and o 2C^2, k and v 2 (3 x 64) C,
// gate, up and down 3 F C; a tied head V C (looked up and multiplied: counted once) and the
// final norm C. An untied head adds its own V C, the token table still only looked up.
TEST_CASE("llama FLOPs per token count the real shapes: grouped k/v heads, three MLP matrices, tied or not") {
  GptConfig c;
  c.arch = llama_family().arch;
  c.n_layer = 30;
  c.n_head = 9;
  c.n_kv_head = 3;
  c.d_model = 576;
  c.ffn_dim = 1536;
  c.vocab_size = c.padded_vocab = 49152;
  const double C = 576, F = 1536, V = 49152, T = 2048;
  const double block = 2 * C + 2 * C * C + 2 * (3 * 64) * C + 3 * F * C;
  const double tied = 6 * (30 * block + V * C + C) + 6 * 30 * T * C;
  CHECK(flops_per_token(c, 2048) == doctest::Approx(tied).epsilon(1e-12));
  CHECK(c.num_params() == int64_t(30 * block + V * C + C));  // 134,515,008: SmolLM2-135M's published size
  c.tie = TiedEmbeddings::untied;
  CHECK(flops_per_token(c, 2048) == doctest::Approx(tied).epsilon(1e-12));
  CHECK(c.num_params() == int64_t(30 * block + 2 * V * C + C));
}

}  // namespace
}  // namespace trainer
