// File: stack_capture.h
//
// Captures the return addresses of the current call, innermost first, with leakscope's own
// frames (the hook and the recorder) cut off, so frames[0] is the code that called malloc.
// Backends: libunwind's unw_backtrace with per-thread caching (stack_capture_libunwind.cc), the
// default, correct in any code; and a frame-pointer walk (stack_capture_frame_pointers.cc) for
// programs built with frame pointers, which falls back to libunwind when its walk looks wrong.
#ifndef LEAKSCOPE_CORE_STACK_CAPTURE_H_
#define LEAKSCOPE_CORE_STACK_CAPTURE_H_

#include <stdint.h>

#include "core/options.h"
#include "core/types.h"

// The program's return address into the outermost hook on this thread (0 outside hooks): the
// innermost frame of the call being recorded, known without an unwind. Set by HookCaller.
extern __thread uintptr_t leakscope_tls_hook_caller __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace leakscope::internal {

struct ThreadState;

// HookCaller is the scope of one exported hook: it records the hook's return address and puts
// back the one before it on leaving, so that a hook called inside another (libstdc++'s operator
// new calling malloc, a signal handler's malloc) leaves the outer one's caller as it found it.
class HookCaller {
 public:
  LS_ALWAYS_INLINE explicit HookCaller(void* return_address) : saved_(leakscope_tls_hook_caller) {
    leakscope_tls_hook_caller = reinterpret_cast<uintptr_t>(return_address);
  }
  LS_ALWAYS_INLINE ~HookCaller() { leakscope_tls_hook_caller = saved_; }
  HookCaller(const HookCaller&) = delete;
  HookCaller& operator=(const HookCaller&) = delete;

 private:
  uintptr_t saved_;
};

// stack_capture_init() finds the runtime's own code range and sets up the unwinders.
// Not thread-safe; runtime init calls it once, before any capture.
void stack_capture_init(OptionUnwind mode);

// stack_capture() fills at most `max_depth` frames of the calling thread (whose state is
// `thread`) and returns how many. One frame asked for inside a hook is the hook's caller, with no
// unwind (start-up stacks keep one: the static initializers of libtorch make half a million). Thread-safe; does not allocate through malloc; not signal-safe
// (libunwind takes loader locks). Needs kCaptureStackNeed bytes of stack: callers check
// stack_capture_has_room() first.
int stack_capture(ThreadState* thread, uintptr_t* frames, int max_depth);

// At most this many of leakscope's own frames sit above the program's (the hook, the recorder,
// the capture), skipped before the frames asked for are counted.
constexpr int kOwnFrameAllowance = 16;

// The stack an unwind needs below the hook (libunwind's context and cursor, the frame buffers),
// with room to spare.
constexpr uintptr_t kCaptureStackNeed = 16 * 1024;

// stack_capture_has_room() is false when the thread runs on an alternate signal stack with less
// than kCaptureStackNeed left below the caller (a handler on a 4 KiB sigaltstack): the allocation
// is then recorded without its stack. Cheap on the thread's own stack (two compares); one
// sigaltstack system call elsewhere.
bool stack_capture_has_room(ThreadState* thread);

// stack_capture_thread_bounds() reads the thread's stack range into `thread` once; false when
// pthread cannot tell it. pthread_getattr_np may read /proc for the main thread (allocating): it
// runs inside the recorder, so that allocation passes through unrecorded.
bool stack_capture_thread_bounds(ThreadState* thread);

// stack_capture_libunwind() and stack_capture_frame_pointers() are the two backends; the latter
// returns 0 when its walk cannot be trusted.
int stack_capture_libunwind(uintptr_t* frames, int max_depth);
int stack_capture_frame_pointers(ThreadState* thread, uintptr_t* frames, int max_depth);

// stack_capture_is_own_code() tells whether `address` lies in libleakscope's code.
bool stack_capture_is_own_code(uintptr_t address);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STACK_CAPTURE_H_
