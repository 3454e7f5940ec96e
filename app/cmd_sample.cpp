// trainer sample: placeholder registration until its issue lands; says so instead of pretending.
#include "app/commands.h"
#include "kernels/errors.h"

namespace trainer {

void add_sample_command(CLI::App& app, CommandList& commands) {
  auto* sub = app.add_subcommand("sample", "(sample: not available yet in this build)");
  sub->allow_extras();
  commands.push_back({sub, [] () -> int { throw ConfigError("trainer sample is not implemented yet"); }});
}

}  // namespace trainer
