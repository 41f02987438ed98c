// File: device_memory.h
//
// What the driver says of each device's memory (cuMemGetInfo: used and total bytes), read on a
// program thread as each memory call returns, for the device whose context is current there (the
// only one cuMemGetInfo speaks of), and kept for the snapshot writer (accelerator.h). Stream-ordered
// calls, which a pool serves in a microsecond, read it at most once a millisecond.
#ifndef LEAKSCOPE_CUDA_DEVICE_MEMORY_H_
#define LEAKSCOPE_CUDA_DEVICE_MEMORY_H_

#include <stddef.h>

namespace leakscope::internal {

// device_memory_set_reader() gives the driver's cuMemGetInfo (cuMemGetInfo_v2); null: none.
using MemoryInfoFunction = int (*)(size_t* free_bytes, size_t* total_bytes);
void device_memory_set_reader(MemoryInfoFunction reader);

// device_memory_note() reads the driver's figures for `device`, the current context's, unless
// `frequent` and they were read less than a millisecond ago. Call from a memory callback at API
// exit, on the thread that made the call. Thread-safe.
void device_memory_note(int device, bool frequent);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CUDA_DEVICE_MEMORY_H_
