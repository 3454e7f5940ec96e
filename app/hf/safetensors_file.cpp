// Safetensors reading (see safetensors_file.h).
#include "app/hf/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <tuple>

#include "data/folder_publication.h"
#include "data/json_value.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

namespace {

// A header larger than this is not a model's (the format's own reader caps it at 100 MB).
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

bool parse_dtype(const std::string& name, StDtype* out) {
  if (name == "F32") *out = StDtype::f32;
  else if (name == "F16") *out = StDtype::f16;
  else if (name == "BF16") *out = StDtype::bf16;
  else return false;
  return true;
}

int64_t json_int(const JsonValue& v, const std::string& where, const std::string& what) {
  if (v.kind != JsonKind::number || !v.is_integer || v.integer < 0)
    throw InputError(where + ": " + what + " is " + json_shown(v) + ", which is not a non-negative integer");
  return v.integer;
}

std::string offsets_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// One tensor's place in the data section, for the layout check once all are read.
struct Span {
  int64_t begin, end;
  std::string name;
};

// The Rust safetensors library's rule (validate()): sorted by begin, the spans tile the data
// section exactly, from 0 to its end, so no byte is read twice and none is left unexplained.
void check_layout(std::vector<Span> spans, int64_t data_bytes, const std::string& file) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  int64_t at = 0;
  const Span* prev = nullptr;
  for (const Span& s : spans) {
    const std::string where = file + ": tensor " + s.name + " data_offsets " + offsets_text(s.begin, s.end);
    if (s.begin < at)
      throw InputError(where + " overlap tensor " + prev->name + "'s " + offsets_text(prev->begin, prev->end) +
                       "; valid: each tensor begins where the previous one ends");
    if (s.begin > at)
      throw InputError(where + " leave a gap of " + std::to_string(s.begin - at) + " bytes after " +
                       (prev ? "tensor " + prev->name + "'s " + offsets_text(prev->begin, prev->end)
                             : std::string("the start of the data section")) +
                       "; valid: the first tensor begins at 0 and each next one where the previous ends");
    at = s.end;
    prev = &s;
  }
  if (at != data_bytes)
    throw InputError(file + ": the tensors' data_offsets end at byte " + std::to_string(at) +
                     " but the data section after the header holds " + std::to_string(data_bytes) +
                     " bytes; valid: the last tensor ends at the end of the file (is the header length wrong?)");
}

}  // namespace

int st_dtype_bytes(StDtype dtype) { return dtype == StDtype::f32 ? 4 : 2; }

const char* st_dtype_name(StDtype dtype) {
  switch (dtype) {
    case StDtype::f32: return "F32";
    case StDtype::f16: return "F16";
    case StDtype::bf16: return "BF16";
  }
  return "?";
}

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float bf16_to_f32(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);  // inf, nan
  } else if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      u = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

SafetensorsIndex parse_safetensors_index(std::string_view text, const std::string& path) {
  const JsonValue index = parse_json(text, path);
  if (index.kind != JsonKind::object)
    throw InputError(path + ": the index is " + json_kind_name(index.kind) +
                     "; valid: an object {\"metadata\": {...}, \"weight_map\": {tensor: file}}");
  if (const JsonValue* meta = index.find("metadata"); meta && meta->kind != JsonKind::null) {
    if (meta->kind != JsonKind::object)
      throw InputError(json_location(text, meta->offset, path) + ": \"metadata\" is " +
                       json_shown(*meta) + "; valid: an object");
    if (const JsonValue* total = meta->find("total_size"); total && total->kind != JsonKind::null)
      json_int(*total, json_location(text, total->offset, path), "metadata.total_size");
  }
  const JsonValue* map = index.find("weight_map");
  if (!map || map->kind != JsonKind::object)
    throw InputError(path + ": " + (map ? "\"weight_map\" is " + json_shown(*map) : "no \"weight_map\"") +
                     "; valid: {\"weight_map\": {tensor: file}}");
  if (map->members.empty())
    throw InputError(json_location(text, map->offset, path) +
                     ": \"weight_map\" names no tensor; valid: {tensor: file} for every weight");
  SafetensorsIndex out;
  for (const auto& [name, file] : map->members) {
    const std::string at = json_location(text, file.offset, path);
    if (file.kind != JsonKind::string)
      throw InputError(at + ": weight_map[\"" + excerpt(name) + "\"] is " + json_shown(file) +
                       "; valid: a shard's file name");
    const bool plain = !file.text.empty() && file.text != "." && file.text != ".." &&
                       file.text.find('/') == std::string::npos &&
                       std::none_of(file.text.begin(), file.text.end(),
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
    if (!plain)
      throw InputError(at + ": shard " + json_shown(file) +
                       " is not a plain file name beside the index; valid: a name such as "
                       "model-00001-of-00002.safetensors (no '/', no control characters, not . or ..)");
    out.by_file[file.text].push_back(name);
    out.shard_of.emplace_back(name, file.text);
  }
  return out;
}

SafetensorsSet::SafetensorsSet(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  check_folder_published(dir, "model folder '" + dir + "'");
  std::error_code ec;
  const bool has_index = fs::exists(index_path, ec), has_single = fs::exists(single_path, ec);
  // Which of two exports is current cannot be told from the files: refuse rather than guess.
  if (has_index && has_single)
    throw InputError("'" + dir + "' holds both model.safetensors and model.safetensors.index.json (two exports, "
                     "one of them stale?); valid: one of the two forms (delete the stale one, or export again "
                     "with --force, which replaces the whole set)");
  if (has_index) {
    const SafetensorsIndex index = parse_safetensors_index(read_file(index_path), index_path);
    for (const auto& [file, names] : index.by_file) add_file(dir + "/" + file, &names);
    for (const auto& [name, file] : index.shard_of)
      if (!tensors_.count(name))
        throw InputError(index_path + ": weight_map names tensor " + excerpt(name) + " in " +
                         excerpt(file) + ", which does not hold it");
    return;
  }
  if (!has_single)
    throw InputError("'" + dir + "' holds neither model.safetensors nor model.safetensors.index.json");
  add_file(single_path, nullptr);
}

std::map<std::string, StTensor> parse_safetensors(std::string_view file, const std::string& path) {
  const std::string self = "safetensors file '" + path + "'";
  const uint64_t size = file.size();
  if (size < 8) throw InputError(self + " is shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(file.data()[i])) << (8 * i);
  if (n > size - 8)
    throw InputError(self + ": header length " + std::to_string(n) + " exceeds the file, which holds " +
                     std::to_string(size - 8) + " bytes after the 8-byte length");
  if (n > kMaxHeaderBytes)
    throw InputError(self + ": header length " + std::to_string(n) + " exceeds the 100 MB limit");
  const std::string_view text(file.data() + 8, size_t(n));
  const JsonValue header = parse_json(text, path + " (header)");
  if (header.kind != JsonKind::object)
    throw InputError(self + ": header is " + json_kind_name(header.kind) +
                     "; valid: an object {tensor: {dtype, shape, data_offsets}, \"__metadata__\": {...}}");
  const char* data = file.data() + 8 + n;
  const int64_t data_bytes = int64_t(size - 8 - n);
  std::map<std::string, StTensor> mine;
  std::vector<Span> spans;
  // parse_json has refused a name given twice (a tensor or __metadata__), naming both places.
  for (const auto& [name, v] : header.members) {
    const std::string where = self + ": tensor " + excerpt(name);
    if (name == "__metadata__") {
      if (v.kind != JsonKind::object)
        throw InputError(self + ": __metadata__ is " + json_kind_name(v.kind) + "; valid: an object of strings");
      for (const auto& [key, value] : v.members)
        if (value.kind != JsonKind::string)
          throw InputError(self + ": __metadata__[\"" + excerpt(key) + "\"] is " + json_kind_name(value.kind) +
                           "; valid: a string");
      continue;
    }
    if (v.kind != JsonKind::object)
      throw InputError(where + " is " + json_kind_name(v.kind) + "; valid: an object {dtype, shape, data_offsets}");
    const JsonValue* dtype = v.find("dtype");
    const JsonValue* shape = v.find("shape");
    const JsonValue* offsets = v.find("data_offsets");
    if (!dtype || dtype->kind != JsonKind::string)
      throw InputError(where + ": dtype is " + (dtype ? json_shown(*dtype) : "missing") + "; valid: F32, F16, BF16");
    if (!shape || shape->kind != JsonKind::array)
      throw InputError(where + ": shape is " + (shape ? json_shown(*shape) : "missing") +
                       "; valid: an array of non-negative integers");
    if (!offsets || offsets->kind != JsonKind::array || offsets->items.size() != 2)
      throw InputError(where + ": data_offsets is " +
                       (!offsets ? std::string("missing")
                        : offsets->kind == JsonKind::array
                            ? "an array of " + std::to_string(offsets->items.size()) + " values"
                            : json_shown(*offsets)) +
                       "; valid: [begin, end]");
    StTensor t;
    if (!parse_dtype(dtype->text, &t.dtype))
      throw InputError(where + " has dtype " + excerpt(dtype->text) + "; valid: F32, F16, BF16");
    // Checked products: a hostile shape must not wrap round to a size that fits.
    int64_t bytes = st_dtype_bytes(t.dtype);
    for (const JsonValue& d : shape->items) {
      t.shape.push_back(json_int(d, where, "shape entry"));
      if (__builtin_mul_overflow(bytes, t.shape.back(), &bytes)) {
        std::string dims;
        for (const JsonValue& e : shape->items) dims += (dims.empty() ? "" : ", ") + json_shown(e);
        throw InputError(where + ": shape [" + dims + "] holds more than 2^63 bytes; valid: a size the file can hold");
      }
    }
    const int64_t begin = json_int(offsets->items[0], where, "data_offsets begin");
    const int64_t end = json_int(offsets->items[1], where, "data_offsets end");
    if (begin > end)
      throw InputError(where + ": data_offsets " + offsets_text(begin, end) + " run backwards; valid: begin <= end");
    if (end > data_bytes || end - begin != bytes)
      throw InputError(where + ": data_offsets " + offsets_text(begin, end) + " do not hold " +
                       std::to_string(t.numel()) + " " + st_dtype_name(t.dtype) + " values inside its " +
                       std::to_string(data_bytes) + "-byte data section; valid: end - begin = " +
                       std::to_string(bytes) + " bytes, end <= " + std::to_string(data_bytes));
    t.data = data + begin;
    mine[name] = t;
    spans.push_back({begin, end, excerpt(name)});
  }
  check_layout(std::move(spans), data_bytes, self);
  return mine;
}

void SafetensorsSet::add_file(const std::string& path, const std::vector<std::string>* expected) {
  MappedFile file(path);
  // Checked in full before any joins the set, so a bad file leaves it as it was.
  std::map<std::string, StTensor> mine = parse_safetensors(std::string_view(file.data(), file.size()), path);
  const std::set<std::string> wanted = expected ? std::set<std::string>(expected->begin(), expected->end())
                                                : std::set<std::string>();
  for (auto& [name, t] : mine) {
    const std::string where = "safetensors file '" + path + "': tensor " + excerpt(name);
    if (expected && !wanted.count(name))
      throw InputError(where + " is not listed for this file in model.safetensors.index.json");
    if (tensors_.count(name)) throw InputError(where + " is also in " + file_of(tensors_.at(name)));
    t.file = int(files_.size());
  }
  tensors_.insert(mine.begin(), mine.end());
  files_.push_back(std::move(file));
}

const StTensor* SafetensorsSet::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void SafetensorsSet::read(const std::string& name, Range range, float* out) const {
  const StTensor* t = find(name);
  TRAINER_CHECK(t != nullptr, "safetensors: no tensor " + name);
  TRAINER_CHECK(range.begin >= 0 && range.begin <= range.end && range.end <= t->numel(),
                "safetensors: read outside " + name);
  const int64_t n = range.size();
  switch (t->dtype) {
    case StDtype::f32: std::memcpy(out, t->data + range.begin * 4, size_t(n) * 4); return;
    case StDtype::bf16:
    case StDtype::f16: {
      const char* src = t->data + range.begin * 2;
      const bool bf = t->dtype == StDtype::bf16;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        out[i] = bf ? bf16_to_f32(bits) : f16_to_f32(bits);
      }
      return;
    }
  }
}

}  // namespace trainer
