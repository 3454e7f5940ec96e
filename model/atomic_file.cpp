// write_file_atomically (see atomic_file.h).
#include "model/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kernels/base/errors.h"

namespace trainer {

void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(const AtomicWriteFn& write)>& body) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError("cannot write " + what + " '" + tmp + "': " + std::strerror(errno));
  auto check_io = [&](bool ok) {
    if (!ok) throw InputError("cannot write " + what + " '" + tmp + "': " + std::strerror(errno));
  };
  try {
    body([&](const void* data, size_t bytes) { check_io(std::fwrite(data, 1, bytes, f) == bytes); });
    check_io(std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0);
    FILE* closing = f;
    f = nullptr;
    check_io(std::fclose(closing) == 0);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw InputError("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  } catch (...) {
    if (f) std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace trainer
