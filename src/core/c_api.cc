// The C API (include/leakscope/leakscope.h) as the preload implements it.
#include "leakscope/leakscope.h"

#include "core/deferred_records.h"
#include "core/leak_check.h"
#include "core/runtime.h"
#include "core/task_registry.h"
#include "core/thread_registry.h"
#include "core/triple_registry.h"

namespace leakscope::internal {
namespace {

bool tracking() { return g_runtime_state.load(std::memory_order_acquire) == kActive; }

}  // namespace
}  // namespace leakscope::internal

using namespace leakscope::internal;

LS_EXPORT int leakscope_task_begin(const char* name, uint64_t id) {
  if (!tracking()) return -1;
  Bookkeeping bookkeeping;
  ThreadState* thread = thread_current();
  if (thread != nullptr) {
    if (thread->task_depth < kMaxTaskDepth) thread->tasks[thread->task_depth] = task_intern(name, id);
    ++thread->task_depth;
  }
  return thread != nullptr ? 0 : -1;
}

LS_EXPORT int leakscope_task_end(void) {
  if (!tracking()) return -1;
  Bookkeeping bookkeeping;
  ThreadState* thread = thread_current();
  int result = -1;
  if (thread != nullptr && thread->task_depth > 0) {
    --thread->task_depth;
    result = 0;
  }
  return result;
}

LS_EXPORT int leakscope_thread_name(const char* name) {
  if (!tracking() || name == nullptr) return -1;
  Bookkeeping bookkeeping;
  ThreadState* thread = thread_current();
  if (thread == nullptr) return -1;
  thread_give_name(thread, name);
  return 0;
}

LS_EXPORT int leakscope_snapshot_now(void) { return runtime_snapshot_now(); }

LS_EXPORT int64_t leakscope_live_bytes(leakscope_domain_t domain) {
  if (static_cast<int>(domain) < 0 || static_cast<int>(domain) >= kDomainCount) return -1;
  if (!tracking()) return 0;
  Bookkeeping bookkeeping;
  deferred_records_settle();  // Python's small objects queued and not yet applied
  return triple_live_bytes_of_domain(static_cast<Domain>(domain));
}

LS_EXPORT int leakscope_is_active(void) { return tracking() ? 1 : 0; }

LS_EXPORT const char* leakscope_stream_path(void) { return tracking() ? runtime_stream_path() : nullptr; }

LS_EXPORT int64_t leakscope_leak_check(void) { return runtime_leak_check(); }

LS_EXPORT int leakscope_register_root_region(const void* begin, size_t size) {
  if (!tracking()) return -1;
  return leak_check_register_root(reinterpret_cast<uintptr_t>(begin), size) ? 0 : -1;
}

LS_EXPORT int leakscope_unregister_root_region(const void* begin, size_t size) {
  if (!tracking()) return -1;
  return leak_check_unregister_root(reinterpret_cast<uintptr_t>(begin), size) ? 0 : -1;
}
