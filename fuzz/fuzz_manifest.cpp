// Fuzzes checkpoint manifests: the input is manifest.yaml's text, parsed and validated as
// read_manifest does (parse_manifest: YAML, fields, then every rule of checkpoint_validate.h).
// Expected: a manifest or an InputError. A finding: any other exception, a crash or
// sanitizer report, a hang, a huge allocation, or a manifest that passes but whose own YAML
// (manifest_to_yaml, what the writer stores) does not parse back.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/checkpoint/checkpoint_manifest.h"
#include "fuzz/fuzz_util.h"
#include "kernels/base/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::CkptManifest m = trainer::parse_manifest(text, "step_00000001/manifest.yaml");
    const std::string yaml = trainer::manifest_to_yaml(m);
    try {
      trainer::parse_manifest(yaml, "rewritten/manifest.yaml");
    } catch (const trainer::UserError& e) {
      std::fprintf(stderr, "finding: an accepted manifest does not reparse after writing: %s\n", e.what());
      std::abort();
    }
  });
  return 0;
}
