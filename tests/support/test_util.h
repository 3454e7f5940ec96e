// Helpers shared by the tests of every layer: paths, running a command, scratch files, random
// data, comparisons. trainer_test_util links only trainer_base: a helper that needs a higher
// layer lives in a header of its own (ensure_mpi.h, tiny_gpt.h, trainer_binary.h, unused_comm.h)
// or in trainer_test_app_support.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainer::testing {

std::string source_dir();
std::string binary_dir();

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs a shell command line, capturing its output.
RunResult run_command(const std::string& command_line);

// A fresh empty directory under the build tree, removed first if present.
std::string scratch_dir(const std::string& name);
void write_text_file(const std::string& path, const std::string& text);
std::string read_text_file(const std::string& path);

// Deterministic pseudo-random floats in [lo, hi) from a seed.
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// max |a - b| / max(|b|, floor) over all elements; NaN where any element's difference is NaN.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b, double floor = 1e-6);

// Whether `candidate` replaces `worst` in a search for the worst error: larger, or NaN. A NaN,
// once the worst, stays it (a plain `!(candidate <= worst)` would let the next number replace
// it, and a NaN anywhere but last would go unseen).
inline bool is_worse(double candidate, double worst) {
  return candidate != candidate ? worst == worst : candidate > worst;
}

}  // namespace trainer::testing
