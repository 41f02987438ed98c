// File: driver_frames.h
//
// Which frames of a stack captured in a CUPTI callback are the driver's own: CUPTI's and libcuda's
// code between the program's driver call and leakscope's callback. A device block's stack leaves
// them out, so that it starts at the call the program (or the CUDA runtime) made.
#ifndef LEAKSCOPE_CUDA_DRIVER_FRAMES_H_
#define LEAKSCOPE_CUDA_DRIVER_FRAMES_H_

#include <stdint.h>

namespace leakscope::internal {

// driver_frames_find() notes where libcupti's and libcuda's code lies. Call once CUPTI is loaded,
// before the callbacks are enabled; not thread-safe; takes the loader's lock.
void driver_frames_find();

// driver_frames() is how many of `frames`' innermost frames lie in that code (recorder.h,
// DriverFrames). Lock-free, allocation-free.
int driver_frames(const uintptr_t* frames, int depth);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CUDA_DRIVER_FRAMES_H_
