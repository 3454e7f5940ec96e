// Reading safetensors files (Hugging Face's tensor format: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
// {...}}, then the raw little-endian data), alone or as the shards of a
// model.safetensors.index.json ({"weight_map": {name: file}}).
// Files are memory-mapped and tensors converted to fp32 on read (F32, F16, BF16; any other
// dtype is an InputError naming the tensor), so a rank that reads only its slices touches
// only their pages. Every header is checked on open, with the Rust safetensors library's rules
// and more: a header length inside the file, JSON that is an object, __metadata__ a map of
// strings, each tensor named once (in a file and across shards) with a known dtype, a shape
// whose size does not overflow and data_offsets holding exactly dtype x shape bytes, and the
// tensors tiling the data section (from 0, no gap, no overlap, to its end). Anything else is
// an InputError naming the file, the tensor and the value.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/file_io.h"
#include "kernels/base/range.h"

namespace trainer {

enum class StDtype : uint8_t { f32, f16, bf16 };
int st_dtype_bytes(StDtype dtype);
const char* st_dtype_name(StDtype dtype);  // "F32", "F16", "BF16"

struct StTensor {
  StDtype dtype = StDtype::f32;
  std::vector<int64_t> shape;
  const char* data = nullptr;  // into the mapped file
  int file = 0;                // which of the set's files holds it
  int64_t numel() const;
};

// The tensors one safetensors file holds, checked as above; `file` holds all its bytes, and
// each tensor's data points into them (its `file` is 0). InputError naming `path`.
std::map<std::string, StTensor> parse_safetensors(std::string_view file, const std::string& path);

// model.safetensors.index.json: each shard's tensors, and every (tensor, shard) in file order.
// Checked: an object whose weight_map names at least one tensor, each in a plain file name
// beside the index (no '/', no control characters, not . or ..), and metadata, when present,
// an object whose total_size is a non-negative integer. InputError naming `path`, line and column.
struct SafetensorsIndex {
  std::map<std::string, std::vector<std::string>> by_file;
  std::vector<std::pair<std::string, std::string>> shard_of;
};
SafetensorsIndex parse_safetensors_index(std::string_view text, const std::string& path);

// The tensors of one folder's weights: model.safetensors, or the shards an index names.
class SafetensorsSet {
 public:
  // dir holds model.safetensors or model.safetensors.index.json; both at once is refused (two
  // exports, one stale: which is current cannot be told). InputError naming the file for
  // anything malformed.
  explicit SafetensorsSet(const std::string& dir);

  const std::map<std::string, StTensor>& tensors() const { return tensors_; }
  const StTensor* find(const std::string& name) const;
  const std::string& file_of(const StTensor& t) const { return files_[size_t(t.file)].path(); }
  // Flat elements [range.begin, range.end) of tensor `name`, converted to fp32.
  void read(const std::string& name, Range range, float* out) const;

 private:
  void add_file(const std::string& path, const std::vector<std::string>* expected);
  std::vector<MappedFile> files_;
  std::map<std::string, StTensor> tensors_;
};

// fp32 from the two 16-bit formats (exact: every bf16 and fp16 value is an fp32 value).
float bf16_to_f32(uint16_t bits);
float f16_to_f32(uint16_t bits);

}  // namespace trainer
