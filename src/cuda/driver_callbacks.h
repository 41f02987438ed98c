// File: driver_callbacks.h
//
// What leakscope does when the CUDA driver calls back through CUPTI: the memory calls of
// driver_calls.inc become device blocks (device_table.h) on the calling thread's triple, with its
// host stack (and Python frames) as for any allocation, and a destroyed context ends its blocks.
// The callback runs synchronously on the thread that made the driver call.
#ifndef LEAKSCOPE_CUDA_DRIVER_CALLBACKS_H_
#define LEAKSCOPE_CUDA_DRIVER_CALLBACKS_H_

#include <cupti.h>
#include <stddef.h>

namespace leakscope::internal {

// driver_callback() is the CUpti_CallbackFunc leakscope subscribes. Allocations are read at API
// exit and only on CUDA_SUCCESS; frees are recorded at API entry. Thread-safe; allocates only
// internal memory; never calls the driver except cuMemGetInfo (device_memory.h).
void CUPTIAPI driver_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data);

// driver_callback_ids() is the list of driver-API callback ids driver_callback() handles, and
// its length in *count.
const CUpti_CallbackId* driver_callback_ids(size_t* count);

// driver_callbacks_set_device_lookup() gives the function that names the device of a context
// (cuptiGetDeviceId); without one, blocks are of no known device.
using DeviceIdFunction = CUptiResult (*)(CUcontext context, uint32_t* device);
void driver_callbacks_set_device_lookup(DeviceIdFunction lookup);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CUDA_DRIVER_CALLBACKS_H_
