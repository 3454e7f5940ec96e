// RankModel (see rank_model.h).
#include "model/rank_model.h"

namespace trainer {

RankModel::RankModel(const GptConfig& config, const RankOptions& options, Backend& backend, RankComms comms,
                     const std::function<void(ParamStore&)>& init)
    : options_(options),
      backend_(backend),
      tensor_(comms.tensor),
      layout_(config, options.layout),
      // An untied head shares nothing between the first and the last stage.
      store_(layout_, backend, comms.data, config.tied() ? comms.tied_embedding : nullptr, options.zero,
             options.bucket_mb, options.grad_reduce_dtype) {
  if (init) init(store_);
  if (tensor_)
    store_.set_tensor_partial_grads(tensor_, options.stage.sequence_parallel == SeqParallel::on
                                                 ? TpPartialGrads::all_replicated
                                                 : TpPartialGrads::per_head);
  stage_ = std::make_unique<GptStage>(layout_, store_, backend, tensor_, options.stage);
}

std::unique_ptr<GptStage> RankModel::other_stage(const StageOptions& options) {
  return std::make_unique<GptStage>(layout_, store_, backend_, tensor_, options);
}

}  // namespace trainer
