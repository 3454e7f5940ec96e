// Packed documents in a training sequence: where each token's document starts, for the
// document attention mask (train.attention_mask: document) and for positions that restart in
// each document (train.reset_positions). A row of T input tokens is split at its boundary
// tokens (data.document_token): a document starts at each occurrence of a start token (GPT-2's
// and the byte tokenizer's end-of-text, which data prepare puts before every document; a
// tokenizer.json's BOS), or right after each end token (a tokenizer with an EOS but no BOS).
// The tokens before a row's first boundary belong to a document that began in an earlier
// sample: they form the row's first document, starting at 0 (as in Megatron and torchtitan).
// Invariants of the result, which the attention, rope and encoder kernels rely on: each
// doc_start[t] is in [0, t] and never decreases along t; positions[t] = t - doc_start[t] (or t
// without the reset).
#pragma once

#include <cstdint>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class AttentionMask : uint8_t { causal, document };
// train.attention_mask names.
inline constexpr EnumName<AttentionMask> kAttentionMaskNames[] = {{AttentionMask::causal, "causal"},
                                                                  {AttentionMask::document, "document"}};
enum class PositionReset : uint8_t { off, per_document };
// Whether the boundary token opens a document or closes one.
enum class DocumentBoundary : uint8_t { starts, ends };

struct DocumentOptions {
  AttentionMask mask = AttentionMask::causal;
  PositionReset positions = PositionReset::off;
  DocumentBoundary boundary = DocumentBoundary::starts;
  int32_t token = -1;  // the boundary token's id (needed when either option is on)

  bool masked() const { return mask == AttentionMask::document; }
  bool resets() const { return positions == PositionReset::per_document; }
  bool any() const { return masked() || resets(); }
};

// For each of the B rows of T tokens: doc_start (B, T) and, when not null, positions (B, T)
// (restarting per document when o.resets(), else t).
void document_layout(const int32_t* tokens, int64_t B, int64_t T, const DocumentOptions& o, int32_t* doc_start,
                     int32_t* positions);

}  // namespace trainer
