// The op table of `trainer bench --profile`: rank 0's rows per step with their time, share of
// the step, calls, and the rates the time gives for what each op moves and computes (OpCost).
// Where both of the device's ceilings are known (a GPU in flops.h's table, or --bandwidth with
// a known peak), each row also has its roofline floor (flops.h's Roofline) and the share of its
// measured time that the floor is, and the table ends with the ops furthest above their floors:
// where a step's time goes beyond what the hardware allows. A row can read above 100% where
// its data stays in cache between calls (the floor assumes every byte comes from device memory).
#pragma once

#include <string>
#include <vector>

#include "app/plan/flops.h"
#include "kernels/op_profiler.h"

namespace trainer {

// roof names where its figures came from (flops.h's roofline_for); unknown says why there is no
// roofline when !roof.roof.known().
void print_profile(const std::vector<OpProfileRow>& rows, int steps, double step_s, const RooflineChoice& roof,
                   const std::string& unknown);

// The JSON array of rows: op, shape, calls/seconds/bytes/flops per step and
// floor_seconds_per_step (null without a roofline).
std::string profile_json(const std::vector<OpProfileRow>& rows, int steps, const Roofline& roof);

}  // namespace trainer
