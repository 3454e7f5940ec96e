// Byte-pair encoding by merge rank, exactly as OpenAI's encoder.py `bpe`: repeatedly take the
// adjacent pair with the lowest merge rank and merge every occurrence of it, left to right
// without overlap, until no adjacent pair has a rank.
// Symbols are token ids; a merge rule maps (left id, right id) to (rank, merged id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace trainer {

struct MergeRule {
  int32_t rank = 0;
  int32_t merged = 0;
};

class MergeTable {
 public:
  // A later rule for the same pair replaces the earlier one (as a Python dict would).
  void add(int32_t left, int32_t right, MergeRule rule);
  const MergeRule* find(int32_t left, int32_t right) const {
    auto it = rules_.find(key(left, right));
    return it == rules_.end() ? nullptr : &it->second;
  }
  size_t size() const { return rules_.size(); }

 private:
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  std::unordered_map<uint64_t, MergeRule> rules_;
};

// Working memory reused across calls.
struct BpeScratch {
  struct Candidate {
    int32_t rank, pos, left, right, merged;
  };
  std::vector<int32_t> prev, next;
  std::vector<Candidate> heap, batch;
};

// Merges *symbols (initially one id per byte) in place.
// O(n log n): a heap of candidate pairs ordered by (rank, position). All candidates of the
// lowest rank are taken out together and applied left to right before any pair they create
// is considered, which is what makes it equal to the reference's one-rank-per-pass loop even
// for merge tables whose ranks are not consistent with their training order.
void bpe_merge(const MergeTable& merges, std::vector<int32_t>* symbols, BpeScratch* scratch);

}  // namespace trainer
