// The emulated cuDNN's control (cudnn_emu.cpp): the version it reports and what it refuses,
// so that tests reach kernels/cuda/cudnn_attention.cpp's version rules and refusals. Process-
// wide (a test sets them before it builds a backend); each setting stays until set again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace emu::cudnn {

// What cudnnGetVersion returns (major * 10000 + minor * 100 + patch); 91900 (9.19.0) at start.
void set_version(size_t version);

// The workspace every execution plan asks for: 4096 bytes at start, so that the workspace path
// runs; 0 as many real attention plans report.
void set_workspace_bytes(int64_t bytes);

enum class Refusal {
  none,               // every graph the emulator can compute has an engine
  graph_finalize,     // the operation graph's finalize returns CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN
  heuristics_empty,   // the heuristics finalize but offer no engine
  plans_all_refused,  // every engine the heuristics offer fails its execution plan's finalize
};
void set_refusal(Refusal refusal);

}  // namespace emu::cudnn
