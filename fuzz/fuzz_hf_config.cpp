// Fuzzes Hugging Face config.json files: the input is the file's text, read as model.from and
// model.init_from read a folder's config.json (gpt_config_from_hf_json: model_type, every
// family's keys and ranges). Expected: a model shape, or an InputError. A finding: any other
// exception, a crash or sanitizer report (a division by a zero head count, an overflow), a
// hang, a huge allocation, or an accepted shape that does not survive export: the config.json
// hf_config_json writes for it must read back as the same shape (what ckpt export --format hf
// then model.from relies on).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/hf/hf_folder.h"
#include "fuzz/fuzz_util.h"
#include "kernels/base/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  trainer::GptConfig config;
  bool accepted = false;
  trainer::fuzz::expect_ok_or_user_error([&] {
    config = trainer::gpt_config_from_hf_json(text, "config.json");
    accepted = true;
  });
  if (!accepted) return 0;
  try {
    const trainer::GptConfig again = trainer::gpt_config_from_hf_json(trainer::hf_config_json(config), "written");
    trainer::check_hf_config("fuzz", "written", again, config);
  } catch (const trainer::UserError& e) {
    std::fprintf(stderr, "finding: an accepted config.json does not round-trip: %s\n", e.what());
    std::abort();
  }
  return 0;
}
