// File: stack_capture.h
//
// Captures the return addresses of the current call, innermost first, with leakscope's own
// frames (the hook and the recorder) cut off, so frames[0] is the code that called malloc.
// Backend: libunwind's unw_backtrace with per-thread caching (stack_capture_libunwind.cc).
#ifndef LEAKSCOPE_CORE_STACK_CAPTURE_H_
#define LEAKSCOPE_CORE_STACK_CAPTURE_H_

#include <stdint.h>

namespace leakscope::internal {

// stack_capture_init() finds the runtime's own code range and sets up the unwinder.
// Not thread-safe; runtime init calls it once, before any capture.
void stack_capture_init();

// stack_capture() fills at most `max_depth` frames and returns how many. Thread-safe; does not
// allocate through malloc; not signal-safe (the unwinder takes loader locks).
int stack_capture(uintptr_t* frames, int max_depth);

// stack_capture_is_own_code() tells whether `address` lies in libleakscope's code.
bool stack_capture_is_own_code(uintptr_t address);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STACK_CAPTURE_H_
