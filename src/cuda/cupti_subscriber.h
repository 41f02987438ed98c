// File: cupti_subscriber.h
//
// leakscope as CUPTI's subscriber: libcupti is loaded only now, from the process's own CUDA (the
// `cupti` option's path; else a libcupti beside a CUDA library the process loaded from a Python
// wheel, nvidia/cuda_cupti/lib; else the one matching the driver's major version; else the
// toolkit's), and driver_callback() is subscribed to the memory calls of driver_calls.inc and to
// the destruction of contexts. CUPTI allows one subscriber per process: when a profiler holds it
// (Nsight, torch.profiler's Kineto), leakscope says so once, naming it, and goes on without
// device memory.
#ifndef LEAKSCOPE_CUDA_CUPTI_SUBSCRIBER_H_
#define LEAKSCOPE_CUDA_CUPTI_SUBSCRIBER_H_

#include "core/stream_format.h"

namespace leakscope::internal {

// cupti_subscribe() subscribes once per process and returns whether leakscope is subscribed;
// later calls return that at once. Call inside the runtime (hook depth > 0): what libcupti
// allocates as it loads is not the program's. Thread-safe.
bool cupti_subscribe();

// cupti_outcome() is what became of the subscription: kWaiting before cupti_subscribe() finished,
// then kTracking or why not. Lock-free.
DeviceTracking cupti_outcome();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CUDA_CUPTI_SUBSCRIBER_H_
