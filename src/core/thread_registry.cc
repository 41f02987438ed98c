#include "core/thread_registry.h"

#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"
#include "core/sys.h"

__thread leakscope::internal::ThreadState* leakscope_tls_thread = nullptr;

namespace leakscope::internal {
namespace {

ThreadRecord* g_records = nullptr;  // kMaxThreads entries, mapped once; pages touched on use
std::atomic<uint32_t> g_end_idx{1};
SpinLock g_register_lock;
pthread_key_t g_exit_key;
bool g_exit_key_ready = false;

void read_own_name(char* name) {
  char buffer[kThreadNameSize + 1] = {};
  prctl(PR_GET_NAME, buffer, 0, 0, 0);
  memcpy(name, buffer, kThreadNameSize);
  name[kThreadNameSize - 1] = '\0';
}

// Runs at pthread exit for every thread that allocated. The state stays valid: the thread may
// still free memory in later TLS destructors, and those events keep its index.
void on_thread_exit(void* data) {
  auto* state = static_cast<ThreadState*>(data);
  ThreadRecord* record = thread_record(state->idx);
  if (record == nullptr) return;
  read_own_name(record->exit_name);
  record->exited.store(true, std::memory_order_release);
}

LS_NOINLINE ThreadState* thread_register() {
  auto* state = static_cast<ThreadState*>(internal_alloc(sizeof(ThreadState)));
  if (state == nullptr || g_records == nullptr) return nullptr;
  uint32_t idx;
  {
    SpinLockGuard guard(g_register_lock);
    idx = g_end_idx.load(std::memory_order_relaxed);
    if (idx >= kMaxThreads) {
      internal_free(state, sizeof(ThreadState));
      return nullptr;
    }
    state->idx = static_cast<ThreadIdx>(idx);
    state->tid = sys::get_tid();
    g_records[idx].tid = state->tid;
    g_end_idx.store(idx + 1, std::memory_order_release);
  }
  leakscope_tls_thread = state;
  if (g_exit_key_ready) pthread_setspecific(g_exit_key, state);
  return state;
}

}  // namespace

bool thread_registry_init() {
  g_records = static_cast<ThreadRecord*>(internal_alloc(kMaxThreads * sizeof(ThreadRecord)));
  if (g_records == nullptr) return false;
  g_exit_key_ready = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
  return true;
}

ThreadState* thread_current() {
  ThreadState* state = thread_current_if_registered();
  if (LS_LIKELY(state != nullptr)) return state;
  return thread_register();
}

ThreadRecord* thread_record(ThreadIdx idx) {
  uint32_t index = raw(idx);
  if (index == 0 || index >= g_end_idx.load(std::memory_order_acquire)) return nullptr;
  return &g_records[index];
}

uint32_t thread_end_idx() { return g_end_idx.load(std::memory_order_acquire); }

void thread_registry_before_fork() { g_register_lock.lock(); }
void thread_registry_after_fork_parent() { g_register_lock.unlock(); }

void thread_registry_after_fork_child() {
  g_register_lock.reset_after_fork();
  ThreadState* self = leakscope_tls_thread;
  uint32_t end = g_end_idx.load(std::memory_order_relaxed);
  for (uint32_t idx = 1; idx < end; ++idx) {
    if (self != nullptr && raw(self->idx) == idx) continue;
    if (!g_records[idx].exited.load(std::memory_order_relaxed)) {
      g_records[idx].exit_name[0] = '\0';
      g_records[idx].exited.store(true, std::memory_order_release);
    }
  }
  if (self != nullptr) {
    self->tid = sys::get_tid();
    g_records[raw(self->idx)].tid = self->tid;
  }
}

}  // namespace leakscope::internal
