// File: hook_guard.h
//
// The guard step of every hook (STYLE.md): whether this call is to be recorded. Only leakscope's
// own bookkeeping and the real allocator's own work are passed through (runtime.h), so a signal
// handler that interrupts a hook's real call (an mmap system call, say) is recorded like any other
// code, while libstdc++'s operator new calling malloc, or jemalloc mapping an arena for the block
// an outer hook is about to record, is not counted twice.
#ifndef LEAKSCOPE_INTERPOSE_HOOK_GUARD_H_
#define LEAKSCOPE_INTERPOSE_HOOK_GUARD_H_

#include "core/runtime.h"

namespace leakscope::internal {

// hook_should_record_slow() handles every case but "active, outside bookkeeping and allocator
// calls"; it runs the runtime's init on the first hook call of the process.
bool hook_should_record_slow();

// hook_should_record() is true when this call is to be recorded. It changes no state: the hook
// then makes the real call (inside an AllocatorCall for allocator functions) and records inside a
// Bookkeeping scope.
LS_ALWAYS_INLINE bool hook_should_record() {
  if (LS_LIKELY((leakscope_tls_hook_depth | leakscope_tls_allocator_depth) == 0 &&
                g_runtime_state.load(std::memory_order_relaxed) == kActive)) {
    return true;
  }
  return hook_should_record_slow();
}

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_HOOK_GUARD_H_
