// Opening what a checkpoint names without trusting it: only regular files (after following
// links) are opened, and a FIFO, device, socket or directory is refused without blocking (the
// open is non-blocking, the check is fstat on the descriptor, and blocking mode is restored
// after); manifest.yaml is read whole only when it is a regular file of at most
// kMaxManifestBytes, so a FIFO or /dev/zero in its place can neither hang nor exhaust memory.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/base/regular_file.h"

namespace trainer {

// 64 MiB: a manifest lists one line per file and per stored piece, far below this for any
// model the limits in checkpoint_validate.h allow.
constexpr int64_t kMaxManifestBytes = int64_t(64) << 20;

// The text of manifest file `path`; a missing, non-regular, oversized or unreadable manifest
// is an InputError naming it.
std::string read_manifest_text(const std::string& path);

}  // namespace trainer
