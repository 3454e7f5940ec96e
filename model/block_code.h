// BlockCode: a family's block as code, the part of its description (ModelFamily::block) that
// runs: how it finds its weights in a layer's unit, and its forward and backward (gpt_block.h).
// GptStage and GptDecoder call these and nothing family-specific.
#pragma once

#include <string>

#include "model/block_buffers.h"
#include "model/gpt_block.h"
#include "model/param_store.h"

namespace trainer {

// One layer's tensors (weights, or gradients with a gradient base) as this rank holds them,
// by their names within the layer ("ln_1.weight").
class LayerTensors {
 public:
  LayerTensors(const ParamStore& store, Tensor base, int unit, std::string prefix)
      : store_(store), base_(base), unit_(unit), prefix_(std::move(prefix)) {}
  Tensor operator()(const char* name) const { return store_.view(base_, unit_, prefix_ + name); }
  // The matrices from `first` to `last` as one (rows, cols) weight: they are adjacent in the
  // buffer (the family's table orders them so), checked.
  Tensor fused(const char* first, const char* last, int64_t rows) const;

 private:
  const ParamStore& store_;
  Tensor base_;
  int unit_;
  std::string prefix_;
};

using BlockForwardFn = void (*)(const BlockContext& ctx, const BlockParams& w, const BlockActs& a,
                                const BlockScratch& s, Tensor inp, Tensor out);
using BlockBackwardFn = void (*)(const BlockContext& ctx, const BlockParams& w, const BlockParams& g,
                                 const BlockActs& a, const BlockScratch& s, Tensor inp, Tensor dresid,
                                 Recompute recompute, const BlockGradStash* stash);

struct BlockCode {
  // The block's weights (or gradients) in its layer, d its local widths.
  BlockParams (*params)(const LayerTensors& layer, const BlockDims& d);
  BlockForwardFn forward;
  BlockBackwardFn backward;
};

}  // namespace trainer
