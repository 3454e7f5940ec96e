// ProcessGrid on one process: every rank of a simulated world builds its grid against a fake
// world that records its split() calls; the records of all ranks are then grouped as
// MPI_Comm_split groups them (same color, ordered by key), and a second pass hands each rank
// groups of the sizes and positions that split would have given. Checked: rank order (tensor
// fastest, then data, then pipeline), every group's members, and the tied-embedding pair.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "parallel/process_grid.h"
#include "tests/support/unused_comm.h"

using namespace trainer;
using trainer::testing::UnusedComm;

namespace {

struct SplitCall {
  int color, key;
  std::string group;
};

// One rank's world: records its splits; with `placement` known (call index -> position and
// size of the group this rank joins), answers each with a communicator of that shape.
class SplitWorld : public UnusedComm {
 public:
  SplitWorld(int rank, int size, const std::vector<std::pair<int, int>>* placement)
      : UnusedComm(rank, size, "world"), placement_(placement) {}
  std::unique_ptr<Comm> split(int color, int key, const std::string& group) override {
    const size_t i = calls.size();
    calls.push_back({color, key, group});
    if (color < 0) return nullptr;
    if (!placement_) return std::make_unique<UnusedComm>(0, 1, group);
    return std::make_unique<UnusedComm>((*placement_)[i].first, (*placement_)[i].second, group);
  }
  std::vector<SplitCall> calls;

 private:
  const std::vector<std::pair<int, int>>* placement_;
};

// The world ranks of every group, per group name, each group in its rank order.
using Groups = std::map<std::string, std::vector<std::vector<int>>>;

struct SimulatedWorld {
  Groups groups;
  std::vector<std::vector<std::pair<int, int>>> placement;  // per rank, per split call
};

SimulatedWorld simulate(const ParallelDims& dims, PipelineLinks links = PipelineLinks::chain) {
  const int n = dims.world();
  std::vector<std::vector<SplitCall>> calls(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    SplitWorld w(r, n, nullptr);
    ProcessGrid grid(w, dims, links);
    calls[size_t(r)] = w.calls;
  }
  SimulatedWorld sim;
  sim.placement.assign(size_t(n), std::vector<std::pair<int, int>>(calls[0].size()));
  for (size_t i = 0; i < calls[0].size(); ++i) {
    std::map<int, std::vector<std::pair<int, int>>> by_color;  // color -> (key, rank)
    for (int r = 0; r < n; ++r) {
      REQUIRE(calls[size_t(r)].size() == calls[0].size());
      const SplitCall& c = calls[size_t(r)][i];
      REQUIRE(c.group == calls[0][i].group);  // every rank splits in the same order
      if (c.color >= 0) by_color[c.color].push_back({c.key, r});
    }
    if (by_color.empty()) continue;  // no rank joined a group
    std::vector<std::vector<int>>& list = sim.groups[calls[0][i].group];
    for (auto& [color, members] : by_color) {
      std::sort(members.begin(), members.end());
      std::vector<int> ranks;
      for (size_t pos = 0; pos < members.size(); ++pos) {
        ranks.push_back(members[pos].second);
        sim.placement[size_t(members[pos].second)][i] = {int(pos), int(members.size())};
      }
      list.push_back(ranks);
    }
    std::sort(list.begin(), list.end());
  }
  return sim;
}

using G = std::vector<std::vector<int>>;

}  // namespace

TEST_CASE("ParallelDims: the questions a layout is asked") {
  const ParallelDims one;
  CHECK(one.one_rank());
  CHECK_FALSE(one.data_parallel());
  CHECK_FALSE(one.tensor_parallel());
  CHECK_FALSE(one.pipelined());
  CHECK_FALSE(one.interleaved());
  CHECK(one.chunks_per_rank() == 1);
  CHECK(one.first_stage(0));
  CHECK(one.last_stage(0));
  CHECK_FALSE(one.end_stage(0));  // nothing to tie across without a pipeline

  const ParallelDims dims{2, 4, 3, 2};  // data 2, tensor 4, pipeline 3, 2 chunks per rank
  CHECK(dims.world() == 24);
  CHECK(dims.data_parallel());
  CHECK(dims.tensor_parallel());
  CHECK(dims.pipelined());
  CHECK(dims.interleaved());
  CHECK(dims.n_stages() == 6);
  CHECK(dims.chunks_per_rank() == 2);
  CHECK(dims.end_stage(0));
  CHECK_FALSE(dims.end_stage(1));
  CHECK(dims.end_stage(2));
  CHECK(dims.last_stage(2));
  CHECK(dims.tensor_divides(12));
  CHECK_FALSE(dims.tensor_divides(6));
  // Chunks without a pipeline are not interleaved across ranks.
  CHECK(ParallelDims{1, 1, 1, 4}.chunks_per_rank() == 1);

  // The group colors: ranks share a color exactly when they differ only in that coordinate.
  for (int a = 0; a < dims.world(); ++a)
    for (int b = 0; b < dims.world(); ++b) {
      const GridCoords x = dims.coords_of(a), y = dims.coords_of(b);
      CHECK((dims.tensor_group(x) == dims.tensor_group(y)) == (x.dp == y.dp && x.pp == y.pp));
      CHECK((dims.data_group(x) == dims.data_group(y)) == (x.tp == y.tp && x.pp == y.pp));
      CHECK((dims.pipeline_group(x) == dims.pipeline_group(y)) == (x.tp == y.tp && x.dp == y.dp));
    }

  CHECK(ParallelDims::is_auto(kAutoDegree));
  CHECK(ParallelDims{kAutoDegree, 1, 1}.any_auto());
  CHECK_FALSE(dims.any_auto());
  CHECK(dims.same_grid(ParallelDims{2, 4, 3, 1}));
  CHECK(dims != ParallelDims{2, 4, 3, 1});
}

TEST_CASE("ParallelDims rank_of / coords_of: tensor fastest, then data, then pipeline") {
  const ParallelDims dims{3, 2, 4};  // data 3, tensor 2, pipeline 4
  const GridCoords c = dims.coords_of(17);
  CHECK(c.tp == 1);
  CHECK(c.dp == 2);
  CHECK(c.pp == 2);
  CHECK(dims.rank_of(GridCoords{2, 1, 2}) == 17);
  CHECK(dims.rank_of(GridCoords{1, 0, 0}) == 2);  // next data rank: one tensor group on
  CHECK(dims.rank_of(GridCoords{0, 0, 1}) == 6);  // next stage: data x tensor on
  for (int r = 0; r < dims.world(); ++r) {
    const GridCoords x = dims.coords_of(r);
    CHECK(dims.rank_of(x) == r);
    CHECK(x.tp < 2);
    CHECK(x.dp < 3);
    CHECK(x.pp < 4);
  }
}

TEST_CASE("ProcessGrid: data 2 x tensor 2 x pipeline 2, every group's members") {
  const ParallelDims dims{2, 2, 2};
  const SimulatedWorld sim = simulate(dims);
  CHECK(sim.groups.at("tensor") == G{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(sim.groups.at("data") == G{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(sim.groups.at("pipeline") == G{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(sim.groups.at("pipeline (gradients)") == G{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(sim.groups.at("tied embedding") == G{{0, 4}, {1, 5}, {2, 6}, {3, 7}});

  // Rank 6 = (pp 1, dp 1, tp 0): its groups as the grid sees them.
  SplitWorld w(6, 8, &sim.placement[6]);
  ProcessGrid grid(w, dims);
  CHECK(grid.coords().tp == 0);
  CHECK(grid.coords().dp == 1);
  CHECK(grid.coords().pp == 1);
  CHECK(!grid.first_stage());
  CHECK(grid.last_stage());
  CHECK(grid.tp().rank() == 0);
  CHECK(grid.tp().size() == 2);
  CHECK(grid.dp().rank() == 1);
  CHECK(grid.dp().size() == 2);
  CHECK(grid.pp().rank() == 1);  // stages in order
  CHECK(grid.pp_grad().rank() == 1);
  REQUIRE(grid.embed() != nullptr);
  CHECK(grid.embed()->rank() == 1);
  CHECK(grid.embed()->size() == 2);
  CHECK(grid.dp().name() == "data");
}

TEST_CASE("ProcessGrid: pipeline 3 pairs the first and last stage, the middle stage has no embed group") {
  const ParallelDims dims{2, 1, 3};  // ranks 0,1 stage 0; 2,3 stage 1; 4,5 stage 2
  const SimulatedWorld sim = simulate(dims);
  CHECK(sim.groups.at("tensor") == G{{0}, {1}, {2}, {3}, {4}, {5}});
  CHECK(sim.groups.at("data") == G{{0, 1}, {2, 3}, {4, 5}});
  CHECK(sim.groups.at("pipeline") == G{{0, 2, 4}, {1, 3, 5}});
  CHECK(sim.groups.at("tied embedding") == G{{0, 4}, {1, 5}});
  SplitWorld middle(3, 6, &sim.placement[3]);
  ProcessGrid grid(middle, dims);
  CHECK(grid.embed() == nullptr);
  CHECK(grid.pp().rank() == 1);
  CHECK(grid.pp().size() == 3);
  CHECK(grid.dp().rank() == 1);
}

TEST_CASE("ProcessGrid: a ring adds the wrap-around pair of the first and last stage, only for a ring") {
  const ParallelDims dims{2, 1, 3};  // ranks 0,1 stage 0; 2,3 stage 1; 4,5 stage 2
  const SimulatedWorld chain = simulate(dims);
  CHECK(chain.groups.count("pipeline wrap-around") == 0);  // no split at all
  CHECK(chain.groups.count("pipeline wrap-around (gradients)") == 0);
  const SimulatedWorld ring = simulate(dims, PipelineLinks::ring);
  CHECK(ring.groups.at("pipeline wrap-around") == G{{0, 4}, {1, 5}});  // stage 0 first
  CHECK(ring.groups.at("pipeline wrap-around (gradients)") == G{{0, 4}, {1, 5}});
  CHECK(ring.groups.at("pipeline") == G{{0, 2, 4}, {1, 3, 5}});
  CHECK(ring.groups.at("tied embedding") == G{{0, 4}, {1, 5}});
  // Rank 5 = (pp 2, dp 1): the last stage is the wrap-around groups' rank 1.
  SplitWorld last(5, 6, &ring.placement[5]);
  ProcessGrid grid(last, dims, PipelineLinks::ring);
  const PipelineComms comms = grid.pipeline_comms();
  CHECK(comms.act == &grid.pp());
  CHECK(comms.grad == &grid.pp_grad());
  REQUIRE(comms.wrap_act != nullptr);
  REQUIRE(comms.wrap_grad != nullptr);
  CHECK(comms.wrap_act != comms.wrap_grad);
  CHECK(comms.wrap_act->rank() == 1);
  CHECK(comms.wrap_act->size() == 2);
  CHECK(comms.wrap_grad->rank() == 1);
  CHECK(comms.wrap_act->name() == "pipeline wrap-around");
  CHECK(comms.wrap_grad->name() == "pipeline wrap-around (gradients)");
  // Where the executor sends: the last stage's activations to stage 0 go round the ring.
  const PipelineRoute out = pipeline_route(comms, ActionKind::send_act, 2, 3);
  CHECK(out.comm == comms.wrap_act);
  CHECK(out.peer == 0);
  const PipelineRoute back = pipeline_route(comms, ActionKind::recv_act, 2, 3);
  CHECK(back.comm == comms.act);
  CHECK(back.peer == 1);
  SplitWorld middle(3, 6, &ring.placement[3]);
  ProcessGrid mid(middle, dims, PipelineLinks::ring);
  CHECK(mid.pp_wrap_act() == nullptr);
  CHECK(mid.pp_wrap_grad() == nullptr);
  SplitWorld first(0, 6, &ring.placement[0]);
  ProcessGrid head(first, dims, PipelineLinks::ring);
  REQUIRE(head.pp_wrap_grad() != nullptr);
  CHECK(head.pp_wrap_grad()->rank() == 0);
  const PipelineRoute grad_out = pipeline_route(head.pipeline_comms(), ActionKind::send_grad, 0, 3);
  CHECK(grad_out.comm == head.pp_wrap_grad());
  CHECK(grad_out.peer == 1);
  CHECK_THROWS_AS(pipeline_route(head.pipeline_comms(), ActionKind::forward, 0, 3), std::logic_error);
  // A chain grid has no wrap-around: a message that needs it is an internal error.
  SplitWorld chain_last(5, 6, &chain.placement[5]);
  ProcessGrid no_ring(chain_last, dims);
  CHECK_THROWS_AS(pipeline_route(no_ring.pipeline_comms(), ActionKind::send_act, 2, 3), std::logic_error);
}

TEST_CASE("ProcessGrid: tensor 4 alone, and no tied-embedding group without pipelining") {
  const ParallelDims dims{1, 4, 1};
  const SimulatedWorld sim = simulate(dims);
  CHECK(sim.groups.at("tensor") == G{{0, 1, 2, 3}});
  CHECK(sim.groups.at("data") == G{{0}, {1}, {2}, {3}});
  CHECK(sim.groups.count("tied embedding") == 0);  // every rank passed a negative color
  SplitWorld w(2, 4, &sim.placement[2]);
  ProcessGrid grid(w, dims);
  CHECK(grid.tp().rank() == 2);
  CHECK(grid.tp().size() == 4);
  CHECK(grid.embed() == nullptr);
  CHECK(grid.first_stage());
  CHECK(grid.last_stage());
  CHECK(grid.pipeline_comms().act == nullptr);  // one stage: no pipeline messages
}

TEST_CASE("ProcessGrid: a world whose size is not data x tensor x pipeline is an internal error") {
  SplitWorld w(0, 7, nullptr);
  CHECK_THROWS_AS(ProcessGrid(w, ParallelDims{2, 2, 2}), std::logic_error);
  CHECK(w.calls.empty());  // refused before any split
}
