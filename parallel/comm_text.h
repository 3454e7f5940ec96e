// Text over a Comm: a string from one rank to all (the comm moves typed tensors, so the bytes
// travel as int32 words after their length). Host buffers; a collective over comm.
#pragma once

#include <string>

#include "parallel/comm.h"

namespace trainer {

// root's text on every rank (the argument is ignored on the others).
std::string broadcast_text(Comm& comm, const std::string& text, int root);

}  // namespace trainer
