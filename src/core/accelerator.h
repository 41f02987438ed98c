// File: accelerator.h
//
// The seam between the runtime and an accelerator's driver in the traced process. The core never
// names a driver: a backend implements this header (src/cuda/ for CUDA, through CUPTI and NVTX
// injection), and the build links exactly one.
//
// An accelerator backend records the device blocks the driver hands out (recorder_device_alloc()
// and the other recorder_device_* calls, into device_table.h), sets the task of a thread from the
// driver's annotation ranges (thread_set_annotated_task()), and reads what the driver says of each
// device's memory for the snapshots.
#ifndef LEAKSCOPE_CORE_ACCELERATOR_H_
#define LEAKSCOPE_CORE_ACCELERATOR_H_

#include <stdint.h>

#include "core/options.h"
#include "core/stream_format.h"

namespace leakscope::internal {

// accelerator_start() prepares what the options ask for (options cuda and nvtx: the injection
// variables the driver and the annotation library read, so that they load this library and call
// it), and says once on stderr what it cannot do. Called once from runtime start, inside the
// runtime (hook depth > 0). Allocates nothing through the hooked malloc.
void accelerator_start(const Options& options);

// accelerator_attach() attaches to a driver that `handle` (a library dlopen() just returned) or the
// global scope holds, when one is wanted and none is attached yet. Called after every successful
// dlopen, inside the runtime; later calls return at once. Thread-safe.
void accelerator_attach(void* handle);

// accelerator_device_tracking() says whether device memory is tracked, for every snapshot's INFO.
// Lock-free.
DeviceTracking accelerator_device_tracking();

// What the driver last said of one device's memory (0 when it never said).
struct DeviceMemoryInfo {
  uint64_t used_bytes;
  uint64_t total_bytes;
};

// accelerator_device_memory() fills *info for device `device` and returns true when the driver has
// said anything of it. Lock-free; the snapshot writer calls it.
bool accelerator_device_memory(int device, DeviceMemoryInfo* info);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_ACCELERATOR_H_
