// Recipe -> component options (see options_from.h).
#include "app/engine/options_from.h"

#include <algorithm>
#include <memory>
#include <string>

#include "app/recipe/recipe_schema.h"
#include "data/tokenizer.h"
#include "kernels/base/errors.h"

namespace trainer {

Device device_from(const Recipe& r) {
  const DeviceChoice d = r.train.device;
  const bool gpu = d == DeviceChoice::cuda || (d == DeviceChoice::auto_detect && cuda_available());
  return gpu ? Device::cuda : Device::cpu;
}

Precision precision_from(const Recipe& r, Device device) {
  const PrecisionChoice choice = r.train.precision;
  if (choice == PrecisionChoice::fp32) return Precision::fp32;
  if (choice == PrecisionChoice::bf16) return Precision::bf16;
  return device == Device::cuda ? Precision::bf16 : Precision::fp32;
}

GptConfig gpt_config_from(const Recipe& r) {
  GptConfig c;
  const ModelConfig& m = r.model;
  c.arch = m.arch;
  if (family_of(m.arch).keys == ConfigKeys::llama) {
    c.n_kv_head = m.n_kv_head > 0 ? m.n_kv_head : m.n_head;
    c.ffn_dim = r.ffn_dim();
    c.norm_eps = m.norm_eps;
    c.rope_theta = m.rope_theta;
    c.rope_scaling = RopeScaling{m.rope_scaling.factor, m.rope_scaling.low_freq_factor,
                                 m.rope_scaling.high_freq_factor, m.rope_scaling.original_context};
    c.tie = m.tie_embeddings ? TiedEmbeddings::tied : TiedEmbeddings::untied;
    c.qk_norm = m.qk_norm ? QkNorm::on : QkNorm::off;
  }
  c.n_layer = r.model.n_layer;
  c.n_head = r.model.n_head;
  c.d_model = r.model.d_model;
  c.vocab_size = r.model.vocab_size;
  c.padded_vocab = r.padded_vocab();
  c.max_seq_len = r.model.seq_len;
  c.init_std = r.model.init_std;
  return c;
}

BackendOptions backend_options_from(const Recipe& r, int local_rank) {
  const TrainConfig& tr = r.train;
  BackendOptions bo;
  bo.device = tr.device;
  bo.precision = precision_from(r, device_from(r));
  bo.attention = tr.attention;
  bo.stochastic_rounding = tr.stochastic_rounding;
  bo.local_rank = local_rank;
  return bo;
}

PipeShape pipe_shape_from(const Recipe& r) {
  return PipeShape{r.parallel.schedule, r.parallel.pipeline, r.grad_accum(), r.parallel.virtual_stages};
}

DType grad_reduce_dtype_from(const Recipe& r) {
  return r.parallel.grad_reduce_dtype == GradReduceDType::bf16 ? DType::bf16 : DType::f32;
}

LrSchedule lr_schedule_from(const Recipe& r) {
  const TrainConfig& tr = r.train;
  LrSchedule s;
  s.kind = tr.lr_schedule.kind;
  s.max_lr = tr.optimizer.lr;
  s.warmup_steps = tr.lr_schedule.warmup_steps;
  s.total_steps = tr.steps;
  s.min_lr_ratio = tr.lr_schedule.min_lr_ratio;
  s.decay_fraction = tr.lr_schedule.decay_fraction;
  return s;
}

LoaderOptions train_loader_options_from(const Recipe& r, const GridCoords& c) {
  const TrainConfig& tr = r.train;
  LoaderOptions o;
  o.sources = r.data.train;
  o.stages = r.data.stages;
  o.seq_len = tr.seq_len;
  o.micro_batch = tr.micro_batch;
  o.grad_accum = r.grad_accum();
  o.dp_rank = c.dp;
  o.dp_size = r.parallel.data;
  o.seed = tr.seed;
  o.vocab_size = r.model.vocab_size;
  o.shuffle = Shuffle::on;
  return o;
}

std::vector<LoaderOptions> val_loader_options_from(const Recipe& r, const GridCoords& c) {
  std::vector<LoaderOptions> out;
  for (const BlendSource& source : r.data.val) {
    LoaderOptions o = train_loader_options_from(r, c);
    o.sources = {BlendSource{source.path, 1, ""}};
    o.stages.clear();
    o.grad_accum = r.eval.batches / r.parallel.data;
    o.shuffle = Shuffle::off;
    out.push_back(o);
  }
  return out;
}

StepOptions step_options_from(const Recipe& r) {
  StepOptions o;
  o.micro_batch = r.train.micro_batch;
  o.seq_len = r.train.seq_len;
  o.grad_accum = r.grad_accum();
  o.seed = r.train.seed;
  o.schedule = r.parallel.schedule;
  o.optimizer = r.train.optimizer;
  o.eval_batches = r.eval.batches;
  o.eval_micro_batches = r.eval.batches / r.parallel.data;
  o.val_names = blend_source_names(r.data.val);
  for (const BlendSource& s : r.data.val) o.val_weights.push_back(s.weight);
  return o;
}

AdamWStep adamw_step(const StepOptions& o, double lr, double grad_norm, int64_t step) {
  const OptimizerConfig& oc = o.optimizer;
  AdamWStep h;
  h.lr = float(lr);
  h.beta1 = float(oc.beta1);
  h.beta2 = float(oc.beta2);
  h.eps = float(oc.eps);
  h.weight_decay = float(oc.weight_decay);
  // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
  double coef = oc.grad_clip > 0 ? oc.grad_clip / (grad_norm + 1e-6) : 1.0;
  h.grad_scale = float(std::min(1.0, coef));
  h.step = step;
  h.seed = o.seed ^ (uint64_t(step) * 0x9E3779B97F4A7C15ull);
  return h;
}

CkptManifest manifest_from(const Recipe& r) {
  CkptManifest m;
  m.seed = r.train.seed;
  m.dims = r.parallel;
  m.zero = r.parallel.zero;
  m.stage_layers = split_layers(r.model.n_layer, r.parallel.n_stages(), r.parallel.stages);
  m.model = gpt_config_from(r);
  m.recipe_yaml = recipe_to_yaml(r);
  return m;
}

PlanLayout plan_layout_from(const Recipe& r, Device device) {
  PlanLayout layout;
  layout.bucket_reduce = bucket_reduce_on(device);
  static_cast<ParallelDims&>(layout) = r.parallel;
  layout.zero = r.parallel.zero;
  layout.micro_batch = r.train.micro_batch;
  layout.global_batch = r.train.global_batch;
  layout.seq_len = r.train.seq_len;
  layout.schedule = r.parallel.schedule;
  layout.recompute = r.train.recompute;
  layout.sequence_parallel = r.parallel.sequence_parallel;
  layout.stage_layers = r.parallel.stages;
  layout.bucket_mb = r.parallel.bucket_mb;
  layout.grad_reduce_dtype = grad_reduce_dtype_from(r);
  layout.documents.mask = r.train.attention_mask;
  layout.documents.positions = r.train.reset_positions ? PositionReset::per_document : PositionReset::off;
  return layout;
}

void document_boundary_from(const Recipe& r, DocumentOptions* o) {
  if (!o->any()) return;
  if (r.data.document_token != "auto") {  // recipe_checks.cpp: a token id of the vocabulary
    o->boundary = DocumentBoundary::starts;
    o->token = int32_t(std::stoll(r.data.document_token));
    return;
  }
  const std::unique_ptr<Tokenizer> tok = make_tokenizer(r.data.tokenizer, r.data.tokenizer_dir, "data.tokenizer",
                                                        r.data.bos, r.data.eos, "data.bos", "data.eos");
  const int32_t start = tok->bos() >= 0 ? tok->bos() : tok->eot();
  if (start >= 0) {
    o->boundary = DocumentBoundary::starts;
    o->token = start;
  } else if (tok->eos() >= 0) {
    o->boundary = DocumentBoundary::ends;
    o->token = tok->eos();
  } else {
    throw ConfigError(r.path + ": data.document_token: auto finds no document boundary: the tokenizer " +
                      message_quote(r.data.tokenizer) + " has neither a BOS nor an EOS (data.bos, data.eos: " +
                      r.data.bos + ", " + r.data.eos + "); valid: data.document_token: the id of the token that "
                      "starts each document, or data.bos / data.eos naming one");
  }
}

}  // namespace trainer
