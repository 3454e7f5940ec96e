// The packed-document keys: train.attention_mask, train.reset_positions and data.document_token
// load into the plan layout the Trainer builds from; a document token that is not a token id of
// the vocabulary, and cuDNN attention under the document mask, are refused naming the key; auto
// resolves to the tokenizer's start token (end-of-text for byte), a number to itself.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/engine/options_from.h"
#include "tests/app/test_recipe_util.h"

namespace trainer::testing {
namespace {

const std::string kRecipe =
    "model: {n_layer: 1, n_head: 2, d_model: 8, vocab_size: 257, seq_len: 16}\n"
    "data: {train: \"x_*.bin\", tokenizer: byte}\n";

TEST_CASE("recipe documents: the keys reach the plan layout and the boundary resolves") {
  const Recipe r = load_recipe_text(kRecipe, {"train.attention_mask=document", "train.reset_positions=true"});
  const PlanLayout l = plan_layout_from(r, Device::cpu);
  CHECK(l.documents.mask == AttentionMask::document);
  CHECK(l.documents.positions == PositionReset::per_document);
  DocumentOptions o = l.documents;
  document_boundary_from(r, &o);
  CHECK(o.boundary == DocumentBoundary::starts);
  CHECK(o.token == 256);  // the byte tokenizer's end-of-text, which data prepare puts before each document
  const Recipe given = load_recipe_text(kRecipe, {"train.attention_mask=document", "data.document_token=10"});
  o = plan_layout_from(given, Device::cpu).documents;
  document_boundary_from(given, &o);
  CHECK(o.token == 10);
  // Off: nothing to resolve, nothing in the layout.
  const Recipe plain = load_recipe_text(kRecipe);
  CHECK(!plan_layout_from(plain, Device::cpu).documents.any());
}

TEST_CASE("recipe documents: a bad document token or cudnn under the mask is refused naming the key") {
  struct Row {
    std::vector<std::string> set;
    std::string says;
  };
  const std::vector<Row> rows = {
      {{"data.document_token=eot"}, "data.document_token: \"eot\" is not a token id of the vocabulary (model.vocab_size "
                                    "257); valid: auto, or a token id from 0 to 256"},
      {{"data.document_token=257"}, "data.document_token: \"257\" is not a token id"},
      {{"data.document_token=-1"}, "data.document_token: \"-1\" is not a token id"},
      {{"data.document_token=99999999999999999999"}, "data.document_token: \"99999999999999999999\" is not a token id"},
      {{"data.document_token="}, "data.document_token: \"\" is not a token id"},
      {{"train.attention_mask=document", "train.attention=cudnn"},
       "train.attention: cudnn does not implement train.attention_mask: document"},
      {{"train.attention_mask=padded"}, "train.attention_mask"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.says);
    const std::string e = load_error(kRecipe, row.set);
    CAPTURE(e);
    CHECK(e.find(row.says) != std::string::npos);
  }
}

}  // namespace
}  // namespace trainer::testing
