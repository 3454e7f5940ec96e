// Text over a Comm: a string from one rank to all, or short ones from every rank to all (the comm moves typed tensors, so the bytes
// travel as int32 words after their length). Host buffers; a collective over comm.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "parallel/comm.h"

namespace trainer {

// root's text on every rank (the argument is ignored on the others).
std::string broadcast_text(Comm& comm, const std::string& text, int root);

// Every rank's short text, by rank, on every rank: each travels in a slot of slot_bytes (a
// multiple of 4), cut to slot_bytes - 1 bytes.
std::vector<std::string> all_gather_short_texts(Comm& comm, const std::string& text, size_t slot_bytes);

}  // namespace trainer
