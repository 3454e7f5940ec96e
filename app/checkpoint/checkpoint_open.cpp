// Opening checkpoint files and reading the manifest safely (see checkpoint_open.h).
#include "app/checkpoint/checkpoint_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kernels/base/errors.h"

namespace trainer {

std::string read_manifest_text(const std::string& path) {
  RegularFile f(path);
  if (!f.ok()) {
    if (f.open_errno() == ENOENT) throw InputError(path + ": missing (the checkpoint is incomplete)");
    throw InputError(path + ": " + f.problem() + "; a checkpoint manifest must be a regular file");
  }
  if (f.size() > kMaxManifestBytes)
    throw InputError(path + ": " + std::to_string(f.size()) + " bytes; a checkpoint manifest must be at most " +
                     std::to_string(kMaxManifestBytes) + " bytes (64 MiB)");
  std::string text(size_t(f.size()), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.fd(), &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path + ": read error: " + std::strerror(errno));
    if (n == 0) break;  // shrank while being read: parse what is there
    got += size_t(n);
  }
  text.resize(got);
  return text;
}

}  // namespace trainer
