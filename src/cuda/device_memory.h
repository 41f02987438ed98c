// File: device_memory.h
//
// What the driver says of each device's memory (cuMemGetInfo: used and total bytes), read on a
// program thread that has just made a memory call on that device (its context is current there),
// at most once per epoch per device, and kept for the snapshot writer (accelerator.h).
#ifndef LEAKSCOPE_CUDA_DEVICE_MEMORY_H_
#define LEAKSCOPE_CUDA_DEVICE_MEMORY_H_

#include <stddef.h>

namespace leakscope::internal {

// device_memory_set_reader() gives the driver's cuMemGetInfo (cuMemGetInfo_v2); null: none.
using MemoryInfoFunction = int (*)(size_t* free_bytes, size_t* total_bytes);
void device_memory_set_reader(MemoryInfoFunction reader);

// device_memory_note() reads the driver's figures for `device` unless they were read in this
// epoch. Call from a memory callback on the thread that made the call. Thread-safe.
void device_memory_note(int device);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CUDA_DEVICE_MEMORY_H_
