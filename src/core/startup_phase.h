// File: startup_phase.h
//
// Whether the calling thread is starting something up: the program before main (the
// initializers of the executable and of the libraries it links), or a library inside dlopen (its
// initializers, and the loader's own work). The interpreter backend adds imports of interpreted
// code (interpreter.h). What is allocated then is the program's startup, and it is where the
// distinct stacks are: libtorch's static registrations alone make about 560 000, each a site of
// a few blocks, so the recorder cuts those stacks short (recorder.h, startup_depth).
#ifndef LEAKSCOPE_CORE_STARTUP_PHASE_H_
#define LEAKSCOPE_CORE_STARTUP_PHASE_H_

#include <stdint.h>

namespace leakscope::internal {

// startup_phase_marker() is the marker frame (stream_format.h) of what the calling thread is in:
// kLibraryLoadFrame inside dlopen, kBeforeMainFrame before main, else 0. Lock-free, signal-safe.
uint64_t startup_phase_marker();

// startup_stack_cut() rewrites the stack `frames` (`depth` of them, innermost first) into a
// start-up stack: its innermost `kept` frames, `marker`, then frames[from, end) (the code that
// started what is starting, when known; from >= kept). Returns the new depth, at most
// `max_depth` (the outermost frames go first).
int startup_stack_cut(uintptr_t* frames, int depth, int kept, uint64_t marker, int from, int end, int max_depth);

// startup_phase_main_begins() is called as main is entered.
void startup_phase_main_begins();

// startup_phase_second_thread() is called when a thread other than the process's first begins
// to allocate: a program that starts threads before main (or never enters main through
// __libc_start_main, as Go's runtime) is past its start-up for every thread from then on.
void startup_phase_second_thread();

// startup_phase_library_load_begins() and _ends() bracket a dlopen on the calling thread
// (nested when an initializer itself calls dlopen); begins() is given the thread's innermost
// interpreted frame then (interpreter_top_frame(), interpreter.h).
void startup_phase_library_load_begins(uintptr_t interpreter_frame);
void startup_phase_library_load_ends();

// A span of the calling thread's start-up in which a start-up stack cut to its innermost frame
// is named by that frame alone: what the stack keeps past it, the code that started the start-up,
// is suspended meanwhile. Before main there is nothing past it. Inside a library load there are
// the interpreted frames that called dlopen, from `interpreter_frame` (the innermost when the load
// began) out, for as long as it is still the innermost; a load that no interpreted code called is
// none (the native frames past its marker are found by an unwind, which a path too deep, or on a
// coroutine's stack, does not take there).
struct StartupScope {
  uint32_t id;  // 0: none; else one id before main, and one per load (a nested one, and what is
                // left of its outer load after it, each their own), never reused
  uintptr_t interpreter_frame;
};

// startup_phase_scope() is the calling thread's scope. Lock-free, signal-safe.
StartupScope startup_phase_scope();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STARTUP_PHASE_H_
