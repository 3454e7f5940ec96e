// CheckpointReader: reads stored tensors of a checkpoint by global element ranges, whatever
// layout wrote it. Every file is checked against its size when opened and against its XXH64
// checksum the first time it is read (verify_files checks a chosen set up front).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "app/checkpoint/checkpoint_manifest.h"
#include "app/checkpoint/checkpoint_open.h"

namespace trainer {

class CheckpointReader {
 public:
  // Parses and validates the manifest (read_manifest) and checks that every file is a regular
  // file of its recorded size; problems are InputErrors naming the checkpoint and the file.
  explicit CheckpointReader(const std::string& dir);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const std::string& dir() const { return dir_; }
  const CkptManifest& manifest() const { return manifest_; }

  // Files that hold any element of these global ranges of (name, state).
  std::set<int> files_for(const std::string& name, OptimizerState state, const std::vector<Range>& ranges) const;
  // Checks the checksums of the given files (InputError on a mismatch).
  void verify_files(const std::set<int>& files);
  void verify_all();

  // Fills out (sum of range sizes) with the global elements of (name, state) over `ranges`,
  // in order; an element that no piece holds is an InputError.
  void read(const std::string& name, OptimizerState state, const std::vector<Range>& ranges, float* out);
  // The whole global tensor.
  std::vector<float> read_full(const std::string& name, OptimizerState state);
  std::vector<int64_t> shape_of(const std::string& name) const;

 private:
  struct Segment {
    int64_t begin, end;  // global flat range
    int file;
    int64_t offset;      // byte offset of `begin` in the file
  };
  const std::vector<Segment>& segments(const std::string& name, OptimizerState state) const;

  std::string dir_;
  CkptManifest manifest_;
  std::vector<ParamSpec> table_;
  std::map<std::string, int> spec_index_;
  mutable std::map<std::pair<std::string, int>, std::vector<Segment>> index_;
  std::vector<RegularFile> files_;
  std::set<int> verified_;
};

// Step directories (step_NNNNNNNN) under `root`, newest first, complete or not: a missing
// manifest or file is found when the checkpoint is opened, so that resume can report it.
std::vector<std::string> list_checkpoints(const std::string& root);

}  // namespace trainer
