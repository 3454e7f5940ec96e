// Safetensors headers: every malformed field is an InputError (exit 2) naming the file, the
// tensor and the value, never a crash or a silent load: duplicate names, offsets that overlap,
// leave gaps or miss the data section's ends, lengths that lie, shapes that overflow, unknown
// dtypes, header lengths past the file or over non-JSON, __metadata__ not a map of strings.
// A well-formed file (three dtypes, a zero-size tensor, metadata) still loads. The shard
// index is held to the same bar (not an object, metadata and total_size of the wrong kind, no
// or an empty weight_map, shard names that leave the folder or hold control characters, a
// listed tensor the shard lacks), a folder holding both forms is refused (two exports: which
// is current cannot be told), and names from the files are echoed escaped.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/hf/safetensors_file.h"
#include "kernels/base/errors.h"
#include "tests/app/test_checkpoint_util.h"

namespace trainer::testing {
namespace {

// What one row writes as dir/model.safetensors: the 8-byte length (header.size() unless
// length_override >= 0), the header, then data_bytes zero bytes.
struct HeaderCase {
  const char* what;
  std::string header;
  int64_t data_bytes;
  std::string fragment;
  int64_t length_override = -1;
};

std::vector<char> safetensors_bytes(const std::string& header, int64_t data_bytes, int64_t length = -1) {
  const uint64_t n = length >= 0 ? uint64_t(length) : uint64_t(header.size());
  std::vector<char> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(char((n >> (8 * i)) & 0xff));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + size_t(data_bytes), 0);
  return bytes;
}

// The InputError's message, or a line saying what happened instead.
std::string input_error_of(const std::string& dir) {
  try {
    SafetensorsSet set(dir);
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not an InputError: ") + e.what() + ")";
  }
  return "(no error)";
}

const std::string kA4 = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";

TEST_CASE("safetensors header: every malformed field is an InputError naming file, tensor and value") {
  const std::vector<HeaderCase> cases = {
      {"file shorter than the length", "", -1, "is shorter than its 8-byte header length"},
      {"header length past the file", "{}", 0, "header length 1000 exceeds the file, which holds 2 bytes", 1000},
      {"header length too short: truncated JSON", "{" + kA4 + "}", 4, "(header):1:", 20},
      {"header length too long: data read as JSON", "{" + kA4 + "}", 4, "(header):1:",
       int64_t(kA4.size()) + 2 + 4},
      {"header not JSON", "hello", 0, "(header):1:1"},
      {"header an array", "[1,2]", 0, "header is an array; valid: an object"},
      {"duplicate tensor name", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)" + kA4 + "}", 8,
       "(header):1:55: duplicate key \"a\" (first at column 2); valid: each key once in an object"},
      {"duplicate __metadata__", R"({"__metadata__":{},"__metadata__":{},)" + kA4 + "}", 4,
       "(header):1:20: duplicate key \"__metadata__\" (first at column 2)"},
      {"__metadata__ not an object", R"({"__metadata__":"pt",)" + kA4 + "}", 4,
       "__metadata__ is a string; valid: an object of strings"},
      {"__metadata__ value not a string", R"({"__metadata__":{"format":1},)" + kA4 + "}", 4,
       "__metadata__[\"format\"] is a number; valid: a string"},
      {"tensor entry not an object", R"({"a":[1]})", 0, "tensor a is an array; valid: an object"},
      {"dtype missing", R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4, "tensor a: dtype is missing"},
      {"dtype not a string", R"({"a":{"dtype":3,"shape":[1],"data_offsets":[0,4]}})", 4, "tensor a: dtype is 3"},
      {"unknown dtype", R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8,
       "tensor a has dtype F64; valid: F32, F16, BF16"},
      {"shape missing", R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4, "tensor a: shape is missing"},
      {"shape not an array", R"({"a":{"dtype":"F32","shape":"2","data_offsets":[0,4]}})", 4,
       "tensor a: shape is \"2\"; valid: an array"},
      {"negative shape entry", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4,
       "tensor a: shape entry is -1, which is not a non-negative integer"},
      {"fractional shape entry", R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4,
       "tensor a: shape entry is 1.5"},
      {"shape product overflows", R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4,
       "tensor a: shape [4294967296, 4294967296] holds more than 2^63 bytes"},
      {"shape overflows before a zero",
       R"({"a":{"dtype":"BF16","shape":[3037000500,3037000500,0],"data_offsets":[0,0]}})", 0,
       "tensor a: shape [3037000500, 3037000500, 0] holds more than 2^63 bytes"},
      {"data_offsets missing", R"({"a":{"dtype":"F32","shape":[1]}})", 4, "tensor a: data_offsets is missing"},
      {"data_offsets of three", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8,
       "tensor a: data_offsets is an array of 3 values; valid: [begin, end]"},
      {"negative offset", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4,
       "tensor a: data_offsets begin is -4, which is not a non-negative integer"},
      {"offset beyond int64", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,99999999999999999999]}})", 4,
       "tensor a: data_offsets end is 1"},
      {"offsets backwards", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4,
       "tensor a: data_offsets [4, 0] run backwards; valid: begin <= end"},
      {"length differs from dtype x shape", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4,
       "tensor a: data_offsets [0, 4] do not hold 2 F32 values inside its 4-byte data section; valid: end - begin = 8"},
      {"end past the data section", R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", 4,
       "tensor a: data_offsets [0, 8] do not hold 4 BF16 values inside its 4-byte data section"},
      {"overlapping offsets",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8,
       "tensor b data_offsets [4, 8] overlap tensor a's [0, 8]; valid: each tensor begins where the previous one ends"},
      {"same offsets twice",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4,
       "tensor b data_offsets [0, 4] overlap tensor a's [0, 4]"},
      {"gap between tensors",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12,
       "tensor b data_offsets [8, 12] leave a gap of 4 bytes after tensor a's [0, 4]"},
      {"first tensor not at 0", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8,
       "tensor a data_offsets [4, 8] leave a gap of 4 bytes after the start of the data section"},
      {"tensors end before the data section", "{" + kA4 + "}", 8,
       "the tensors' data_offsets end at byte 4 but the data section after the header holds 8 bytes"},
      {"no tensors, data left over", "{}", 4,
       "the tensors' data_offsets end at byte 0 but the data section after the header holds 4 bytes"},
  };
  for (const HeaderCase& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    const std::string dir = scratch_dir("safetensors_header");
    const std::string path = dir + "/model.safetensors";
    std::vector<char> bytes = safetensors_bytes(c.header, c.data_bytes < 0 ? 0 : c.data_bytes, c.length_override);
    if (c.data_bytes < 0) bytes.resize(5);
    write_bytes_file(path, bytes);
    const std::string e = input_error_of(dir);
    CAPTURE(e);
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find(c.fragment) != std::string::npos);
  }
}

TEST_CASE("safetensors header: a well-formed file loads, in any key order, with padding") {
  // b's bytes come first in the data, a zero-size tensor sits between, and the header ends in
  // spaces as the Python writer pads it.
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"__metadata__":{"format":"pt"},)"
      R"("z":{"dtype":"BF16","shape":[3,0],"data_offsets":[4,4]},)"
      R"("b":{"dtype":"F16","shape":[1,2],"data_offsets":[0,4]}}   )";
  std::vector<char> bytes = safetensors_bytes(header, 12);
  const size_t data = 8 + header.size();
  const uint16_t f16[2] = {0x3c00, 0xc000};  // 1, -2
  const float f32[2] = {0.5f, -3.0f};
  std::memcpy(bytes.data() + data, f16, 4);
  std::memcpy(bytes.data() + data + 4, f32, 8);
  const std::string dir = scratch_dir("safetensors_header_ok");
  write_bytes_file(dir + "/model.safetensors", bytes);
  const SafetensorsSet set(dir);
  REQUIRE(set.tensors().size() == 3);
  float out[2] = {0, 0};
  set.read("a", {0, 2}, out);
  CHECK(out[0] == 0.5f);
  CHECK(out[1] == -3.0f);
  set.read("b", {0, 2}, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.0f);
  CHECK(set.find("z")->numel() == 0);
  CHECK(set.find("b")->shape == std::vector<int64_t>{1, 2});
}

// One row: the index's text, and what the error says (every row also names the index file).
struct IndexCase {
  const char* what;
  std::string index;
  std::string fragment;
};

TEST_CASE("safetensors index: every malformed field is an InputError naming the index, line and value") {
  const std::vector<IndexCase> cases = {
      {"not JSON", "weight_map", "model.safetensors.index.json:1:1"},
      {"an array", "[{\"weight_map\": {}}]", "the index is an array; valid: an object"},
      {"metadata a string", "{\"metadata\": \"x\", \"weight_map\": {\"a\": \"a.safetensors\"}}",
       "index.json:1:14: \"metadata\" is \"x\"; valid: an object"},
      {"total_size negative", "{\"metadata\": {\"total_size\": -5},\n \"weight_map\": {\"a\": \"a.safetensors\"}}",
       "index.json:1:29: metadata.total_size is -5, which is not a non-negative integer"},
      {"total_size a string", "{\"metadata\": {\"total_size\": \"12\"}, \"weight_map\": {\"a\": \"a.safetensors\"}}",
       "metadata.total_size is \"12\""},
      {"no weight_map", "{\"metadata\": {}}", "index.json: no \"weight_map\"; valid: {\"weight_map\""},
      {"weight_map a list", "{\"weight_map\": [\"a.safetensors\"]}", "\"weight_map\" is an array"},
      {"weight_map empty", "{\"weight_map\": {}}", "index.json:1:16: \"weight_map\" names no tensor"},
      {"shard not a string", "{\"weight_map\": {\"a\": 3}}", "index.json:1:22: weight_map[\"a\"] is 3; valid: a shard's"},
      {"shard empty", "{\"weight_map\": {\"a\": \"\"}}", "shard \"\" is not a plain file name beside the index"},
      {"shard in a parent", "{\"weight_map\": {\"a\": \"../a.safetensors\"}}", "shard \"../a.safetensors\" is not a plain"},
      {"shard the parent", "{\"weight_map\": {\"a\": \"..\"}}", "shard \"..\" is not a plain"},
      {"shard the folder", "{\"weight_map\": {\"a\": \".\"}}", "shard \".\" is not a plain"},
      {"shard absolute", "{\"weight_map\": {\"a\": \"/etc/passwd\"}}", "shard \"/etc/passwd\" is not a plain"},
      // A NUL would cut the name short when the file is opened: another file than the one named.
      {"shard with a NUL", "{\"weight_map\": {\"a\": \"a.safetensors\\u0000x\"}}",
       "shard \"a.safetensors\\x00x\" is not a plain"},
      {"shard with an escape", "{\"weight_map\": {\"a\": \"a\\u001b[31m\"}}", "shard \"a\\x1b[31m\" is not a plain"},
      {"tensor the shard lacks", "{\"weight_map\": {\"a\": \"a.safetensors\", \"q\\u001b\": \"a.safetensors\"}}",
       "weight_map names tensor q\\x1b in a.safetensors, which does not hold it"},
  };
  for (const IndexCase& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    const std::string dir = scratch_dir("safetensors_index");
    write_bytes_file(dir + "/a.safetensors", safetensors_bytes("{" + kA4 + "}", 4));
    write_bytes_file(dir + "/model.safetensors.index.json", std::vector<char>(c.index.begin(), c.index.end()));
    const std::string e = input_error_of(dir);
    CAPTURE(e);
    CHECK(e.find(dir + "/") != std::string::npos);
    CHECK(e.find(c.fragment) != std::string::npos);
    CHECK(e.find('\x1b') == std::string::npos);
  }
}

TEST_CASE("safetensors index: a tensor listed in a shard that does not hold it is named") {
  const std::string dir = scratch_dir("safetensors_index_lacks");
  write_bytes_file(dir + "/a.safetensors", safetensors_bytes("{" + kA4 + "}", 4));
  const std::string index = "{\"weight_map\": {\"a\": \"a.safetensors\", \"b\": \"a.safetensors\"}}";
  write_bytes_file(dir + "/model.safetensors.index.json", std::vector<char>(index.begin(), index.end()));
  CHECK(input_error_of(dir).find("weight_map names tensor b in a.safetensors, which does not hold it") !=
        std::string::npos);
}

TEST_CASE("safetensors folder: both model.safetensors and an index is refused, naming both") {
  const std::string dir = scratch_dir("safetensors_both");
  write_bytes_file(dir + "/a.safetensors", safetensors_bytes("{" + kA4 + "}", 4));
  write_bytes_file(dir + "/model.safetensors", safetensors_bytes("{" + kA4 + "}", 4));
  const std::string index = "{\"weight_map\": {\"a\": \"a.safetensors\"}}";
  write_bytes_file(dir + "/model.safetensors.index.json", std::vector<char>(index.begin(), index.end()));
  const std::string e = input_error_of(dir);
  CHECK(e.find("'" + dir + "' holds both model.safetensors and model.safetensors.index.json") != std::string::npos);
  CHECK(e.find("--force") != std::string::npos);
  std::filesystem::remove(dir + "/model.safetensors");
  CHECK(input_error_of(dir) == "(no error)");
}

TEST_CASE("safetensors header: a tensor name or dtype with control characters is echoed escaped") {
  const std::string dir = scratch_dir("safetensors_escape");
  write_bytes_file(dir + "/model.safetensors",
                   safetensors_bytes(R"({"a\u001b[2J\n":{"dtype":"F\u001b","shape":[1],"data_offsets":[0,4]}})", 4));
  const std::string e = input_error_of(dir);
  CAPTURE(e);
  CHECK(e.find("tensor a\\x1b[2J\\x0a has dtype F\\x1b; valid: F32") != std::string::npos);
  CHECK(e.find('\x1b') == std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
}

}  // namespace
}  // namespace trainer::testing
