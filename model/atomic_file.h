// Writing a file atomically: into PATH.tmp.<pid>, flushed and fsynced, then renamed over PATH.
// Any failure, including one thrown by the caller's writer, removes the temporary file and
// leaves PATH as it was.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace trainer {

// Appends bytes to the file being written; a failed write is an InputError naming the file
// and `what` (e.g. "llm.c model file").
using AtomicWriteFn = std::function<void(const void* data, size_t bytes)>;

void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(const AtomicWriteFn& write)>& body);

}  // namespace trainer
