// The entry points the leakscope Python package (python/leakscope) and its sitecustomize call
// through ctypes, beside the public C API: what they need to follow asyncio's tasks a step at a
// time (docs/PYTHON.md, tasks under asyncio) and to leave fork's warning as it is untraced. A ctypes call costs a traced step about a microsecond, and allocates; a step
// instead writes its task into a cell of its thread's state.
#include <stdint.h>

#include "core/runtime.h"
#include "core/task_registry.h"
#include "core/thread_registry.h"

using namespace leakscope::internal;

// leakscope_python_task_id() interns task (name, id) and returns its id, 0 for no task (an empty
// name) or when not tracking.
LS_EXPORT uint32_t leakscope_python_task_id(const char* name, uint64_t id) {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive) return 0;
  Bookkeeping bookkeeping;
  return raw(task_intern(name, id));
}

// leakscope_python_step_task_cell() is the calling thread's ThreadState::step_task, which the
// package sets to a task id plus 1 while an asyncio step runs and back to 0 after it; null when
// not tracking.
LS_EXPORT uint32_t* leakscope_python_step_task_cell(void) {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive) return nullptr;
  Bookkeeping bookkeeping;
  ThreadState* thread = thread_current();
  return thread != nullptr ? &thread->step_task : nullptr;
}

// leakscope_python_before_final_collection() takes the snapshot before the interpreter's last
// collection of its garbage, which leakscope's sitecustomize runs as the program's atexit handlers
// end: reference cycles the collector has not reached yet (gen2 waits for a quarter of the
// long-lived objects to be new) are no leak, and the analysis tells their fall from a shutdown by
// this snapshot (docs/ANALYSIS.md).
LS_EXPORT int leakscope_python_before_final_collection(void) { return runtime_snapshot_now(SnapshotReason::kBeforeCollection); }

// leakscope_python_own_threads() is the number of threads leakscope runs in the process, which a
// program does not have untraced: CPython 3.12+ counts them when it warns that a fork is unsafe.
LS_EXPORT int leakscope_python_own_threads(void) {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive) return 0;
  return runtime_own_threads();
}
