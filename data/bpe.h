// Byte-pair encoding by merge rank, exactly as OpenAI's encoder.py `bpe`: repeatedly take the
// adjacent pair with the lowest merge rank and merge every occurrence of it, left to right
// without overlap, until no adjacent pair has a rank.
// Symbols are token ids; a merge rule maps (left id, right id) to (rank, merged id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainer {

struct MergeRule {
  int32_t rank = 0;
  int32_t merged = 0;
};

// Open addressing on the pair (linear probing, at most half full): one cache line per lookup,
// which is what BPE's inner loop does most.
class MergeTable {
 public:
  // A later rule for the same pair replaces the earlier one (as a Python dict would).
  void add(int32_t left, int32_t right, MergeRule rule);
  const MergeRule* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t k = key(left, right);
    for (size_t i = slot_of(k);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.rule.merged < 0) return nullptr;  // empty
      if (s.key == k) return &s.rule;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    MergeRule rule{0, -1};  // merged < 0: empty (merged ids are token ids, never negative)
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t k) const {
    const uint64_t h = k * 0x9E3779B97F4A7C15ull;  // the high bits mix every bit of both ids
    return static_cast<size_t>(h ^ (h >> 32)) & (slots_.size() - 1);
  }
  void grow();
  std::vector<Slot> slots_;
  size_t size_ = 0;
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
