// File: startup_stack_memo.h
//
// The triples of a thread's start-up allocations, by their innermost frame. A start-up stack cut
// to one frame (startup_depth=1, the default) is that frame, a marker, and what started the start-up:
// before main nothing, inside a library load the code that called dlopen, which stays suspended
// until the load ends. So within one start-up scope (startup_phase.h) the caller alone names the
// stack, and the capture, the depot and the triple table are asked once per caller instead of at
// every allocation: libtorch's static initializers make about 850 000 allocations from about 18 000
// callers as `import torch` loads it, and as many before the libtorch demo's main.
#ifndef LEAKSCOPE_CORE_STARTUP_STACK_MEMO_H_
#define LEAKSCOPE_CORE_STARTUP_STACK_MEMO_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

struct ThreadState;
struct TripleEntry;

// What names a memoized triple besides the thread (each thread has its own memo).
struct StartupStackKey {
  uint32_t scope;    // StartupScope::id
  uintptr_t caller;  // the innermost frame
  TaskId task;
  Domain domain;
};

// startup_stack_memo_find() is the triple kept for `key`, or nullptr.
TripleEntry* startup_stack_memo_find(const ThreadState* thread, const StartupStackKey& key);

// startup_stack_memo_keep() keeps `triple` for `key`, in place of what its slot held; nothing when
// the memo's memory cannot be had (it is mapped at the thread's first keep, and kept for the
// threads that take its slot after it: keys never match across scopes, whose ids are not reused).
void startup_stack_memo_keep(ThreadState* thread, const StartupStackKey& key, TripleEntry* triple);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STARTUP_STACK_MEMO_H_
