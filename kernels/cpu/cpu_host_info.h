// Facts about the host a CPU backend runs on: the processor's model name and the memory the
// kernel reports. Read from /proc on every call (cheap, and memory changes while a run starts).
#pragma once

#include <string>

#include "kernels/backend.h"

namespace trainer {

// "AMD EPYC 7B13", from the first "model name" line of /proc/cpuinfo; "unknown CPU" when absent.
std::string cpu_model_name();
// MemTotal and MemAvailable from /proc/meminfo (zeros when unreadable).
DeviceMemory host_memory();

}  // namespace trainer
