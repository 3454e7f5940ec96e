// ParallelDims: the parallel degrees of a layout as one value, asked by name (torchtitan's
// ParallelDims). The recipe, the process grid, the stage layout, the plan and the checkpoint
// manifest embed it, so a new degree (context, expert) is one field here and one rule in each
// question below, not a field restated in five structs.
//
// Rank order: tensor fastest, then data, then pipeline:
//   rank = (pp * data + dp) * tensor + tp.
// Invariants: every degree >= 1 once resolved (a loaded recipe may still hold kAutoDegree in
// data, tensor or pipeline, and asks is_auto() before anything else); virtual_stages is the
// model chunks per pipeline rank (interleaved schedules) and is 1 without a pipeline. Nothing
// outside this file compares a degree with a number: it asks one of the questions below.
#pragma once

#include <string>

namespace trainer {

// A degree written as `auto` in a recipe: chosen at start from the world size, the device and
// the model (app/engine/auto_layout.h); a resolved layout never holds it.
constexpr int kAutoDegree = -1;

// Where one rank sits in the grid.
struct GridCoords {
  int dp = 0;
  int tp = 0;
  int pp = 0;
};

struct ParallelDims {
  int data = 1;
  int tensor = 1;
  int pipeline = 1;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved schedule)

  int world() const { return data * tensor * pipeline; }
  bool one_rank() const { return world() == 1; }
  bool data_parallel() const { return data > 1; }
  bool tensor_parallel() const { return tensor > 1; }
  bool pipelined() const { return pipeline > 1; }
  // More than one model chunk per pipeline rank.
  bool interleaved() const { return virtual_stages > 1; }
  // Chunks of the model over the whole pipeline (virtual stages in all).
  int n_stages() const { return pipeline * virtual_stages; }
  // Layouts that keep the interleaved chunking only where a pipeline exists to interleave.
  int chunks_per_rank() const { return pipelined() ? virtual_stages : 1; }

  bool first_stage(int pp) const { return pp == 0; }
  bool last_stage(int pp) const { return pp == pipeline - 1; }
  // The first and the last stage of a pipeline, which both hold the tied token embedding and
  // are joined by an interleaved ring's wrap-around link.
  bool end_stage(int pp) const { return pipelined() && (first_stage(pp) || last_stage(pp)); }

  // A degree of a loaded recipe that is still `auto`.
  static bool is_auto(int degree) { return degree == kAutoDegree; }
  bool any_auto() const { return is_auto(data) || is_auto(tensor) || is_auto(pipeline); }
  // Whether `n` splits evenly over the tensor group (heads, vocabulary rows, widths).
  bool tensor_divides(long long n) const { return n % tensor == 0; }

  int rank_of(const GridCoords& c) const { return (c.pp * data + c.dp) * tensor + c.tp; }
  GridCoords coords_of(int rank) const {
    GridCoords c;
    c.tp = rank % tensor;
    c.dp = (rank / tensor) % data;
    c.pp = rank / (tensor * data);
    return c;
  }
  // Colors that group the ranks sharing every coordinate but one (Comm::split's color).
  int tensor_group(const GridCoords& c) const { return c.pp * data + c.dp; }
  int data_group(const GridCoords& c) const { return c.pp * tensor + c.tp; }
  int pipeline_group(const GridCoords& c) const { return c.dp * tensor + c.tp; }

  // The degrees that decide where a rank sits (not the chunking within a stage).
  bool same_grid(const ParallelDims& o) const {
    return data == o.data && tensor == o.tensor && pipeline == o.pipeline;
  }
  bool operator==(const ParallelDims& o) const { return same_grid(o) && virtual_stages == o.virtual_stages; }
  bool operator!=(const ParallelDims& o) const { return !(*this == o); }
};

// "rank 3 (data 1, tensor 0, pipeline 1)": how traces and hang reports name a rank.
std::string rank_label(int world_rank, const GridCoords& c);

}  // namespace trainer
