// Opening files that must be regular files: a FIFO, a device (/dev/zero, /dev/urandom), a
// socket or a directory named where a recipe, tokenizer, shard or model file belongs is
// refused at once instead of blocking forever in open(2) or reading without end. Links are
// followed (a link to a regular file is fine); a dangling link or a loop fails in open(2) with
// the system's reason.
//
// The open uses O_NONBLOCK, so opening a FIFO without a writer returns instead of waiting;
// the flag is cleared again once fstat(2) has shown a regular file.
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

// A read-only descriptor of the regular file at path (the caller closes it), or InputError
// "<what> '<path>': <reason>" naming what the file is when it is not a regular file.
int open_regular_file(const std::string& path, const std::string& what);

// What is at path, for messages: "a regular file", "a directory", "a FIFO (named pipe)", "a
// character device", ..., or "a dangling or looping symbolic link" / "missing".
std::string describe_path_kind(const std::string& path);

// The whole file, at most max_bytes (a larger one is an InputError naming both sizes).
std::string read_regular_file(const std::string& path, const std::string& what, int64_t max_bytes);

}  // namespace trainer
