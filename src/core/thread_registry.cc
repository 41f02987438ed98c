#include "core/thread_registry.h"

#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>

#include "core/deferred_records.h"
#include "core/high_water.h"
#include "core/internal_alloc.h"
#include "core/spin_lock.h"
#include "core/startup_phase.h"
#include "core/sys.h"

__thread leakscope::internal::ThreadState* leakscope_tls_thread = nullptr;

namespace leakscope::internal {
namespace {

// Records come in blocks of kRecordsPerBlock, made as slots come into use (a process runs a few
// threads, not kMaxThreadSlots); blocks never move, so a record is read without the lock.
constexpr uint32_t kRecordBlockShift = 10;
constexpr uint32_t kRecordsPerBlock = 1u << kRecordBlockShift;
constinit std::atomic<ThreadRecord*> g_record_blocks[kMaxThreadSlots / kRecordsPerBlock] = {};

ThreadRecord& record_at(uint32_t slot) {
  return g_record_blocks[slot >> kRecordBlockShift].load(std::memory_order_acquire)[slot & (kRecordsPerBlock - 1)];
}

// ensure_record_block() makes the block that holds `slot`; false when memory is exhausted.
bool ensure_record_block(uint32_t slot) {
  std::atomic<ThreadRecord*>& block = g_record_blocks[slot >> kRecordBlockShift];
  if (block.load(std::memory_order_acquire) != nullptr) return true;
  auto* fresh = static_cast<ThreadRecord*>(internal_alloc(kRecordsPerBlock * sizeof(ThreadRecord)));
  if (fresh == nullptr) return false;
  ThreadRecord* expected = nullptr;
  if (!block.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    internal_free(fresh, kRecordsPerBlock * sizeof(ThreadRecord));
  }
  return true;
}

ThreadState** g_states = nullptr;  // the state of each slot, kept for the slot's next thread
uint32_t* g_free_slots = nullptr;  // released slots, a stack
uint32_t g_free_count = 0;
uint32_t g_slot_end = 1;           // slot 0 is never used
uint32_t g_next_incarnation = 1;
SpinLock g_register_lock;          // guards everything above
pthread_key_t g_exit_key;
bool g_exit_key_ready = false;

void read_own_name(char* name) {
  char buffer[kThreadNameSize + 1] = {};
  prctl(PR_GET_NAME, buffer, 0, 0, 0);
  memcpy(name, buffer, kThreadNameSize);
  name[kThreadNameSize - 1] = '\0';
}

// Runs at pthread exit for every thread that allocated. The state stays valid: the thread may
// still free memory in later TLS destructors, and those events keep its slot; the slot is only
// released once the kernel has forgotten the thread.
void on_thread_exit(void* data) {
  auto* state = static_cast<ThreadState*>(data);
  ThreadRecord& record = record_at(raw(state->slot));
  read_own_name(record.exit_name);
  record.exited.store(true, std::memory_order_release);
  high_water_publish();  // what it moved is not lost to the total with it
}

// claim_slot() takes a released slot, or a new one for `fresh` (a state allocated beforehand, as
// nothing is allocated under the lock); true with *state null when a new slot needs `fresh` or
// the record block of *slot made first; false when every slot is taken.
bool claim_slot(ThreadState*& fresh, uint32_t* slot, ThreadState** state, uint32_t* incarnation, pid_t tid) {
  SpinLockGuard guard(g_register_lock);
  if (g_free_count > 0) {
    *slot = g_free_slots[--g_free_count];
    *state = g_states[*slot];
  } else if (g_slot_end >= kMaxThreadSlots) {
    *state = nullptr;
    return false;
  } else if (fresh == nullptr || g_record_blocks[g_slot_end >> kRecordBlockShift].load(std::memory_order_relaxed) == nullptr) {
    *slot = g_slot_end;
    *state = nullptr;
    return true;  // come back with a state and the block
  } else {
    *slot = g_slot_end++;
    *state = g_states[*slot] = fresh;
    fresh = nullptr;
  }
  *incarnation = g_next_incarnation++;
  ThreadRecord& record = record_at(*slot);
  record.tid = tid;
  record.exit_name[0] = '\0';
  record.given_name[0] = '\0';
  record.exited.store(false, std::memory_order_relaxed);
  record.incarnation = *incarnation;
  return true;
}

LS_NOINLINE ThreadState* thread_register() {
  if (g_states == nullptr) return nullptr;
  pid_t tid = sys::get_tid();
  ThreadState* fresh = nullptr;
  ThreadState* state = nullptr;
  uint32_t slot = 0;
  uint32_t incarnation = 0;
  while (claim_slot(fresh, &slot, &state, &incarnation, tid) && state == nullptr) {
    if (fresh == nullptr) fresh = static_cast<ThreadState*>(internal_alloc(sizeof(ThreadState)));
    if (fresh == nullptr) return nullptr;
    if (!ensure_record_block(slot)) {
      internal_free(fresh, sizeof(ThreadState));
      return nullptr;
    }
  }
  if (fresh != nullptr) internal_free(fresh, sizeof(ThreadState));  // a slot was released meanwhile
  if (state == nullptr) return nullptr;  // every slot is taken
  StartupStackMemoSlot* startup_memo = state->startup_memo;
  memset(state, 0, sizeof(ThreadState));  // what a slot's last thread left is not this one's
  state->startup_memo = startup_memo;     // its keys name scopes of the last thread's, never this one's
  state->slot = static_cast<ThreadSlot>(slot);
  state->incarnation = incarnation;
  state->tid = tid;
  leakscope_tls_thread = state;
  if (tid != sys::get_pid()) {
    startup_phase_second_thread();
    deferred_records_end_alone();  // before this thread records anything
  }
  if (g_exit_key_ready) pthread_setspecific(g_exit_key, state);
  return state;
}

}  // namespace

bool thread_registry_init() {
  g_states = static_cast<ThreadState**>(internal_alloc(kMaxThreadSlots * sizeof(ThreadState*)));
  g_free_slots = static_cast<uint32_t*>(internal_alloc(kMaxThreadSlots * sizeof(uint32_t)));
  if (g_states == nullptr || g_free_slots == nullptr) return false;
  g_exit_key_ready = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
  return true;
}

ThreadState* thread_current() {
  ThreadState* state = thread_current_if_registered();
  if (LS_LIKELY(state != nullptr)) return state;
  return thread_register();
}

uint32_t thread_slot_end() {
  SpinLockGuard guard(g_register_lock);
  return g_slot_end;
}

bool thread_slot_read(ThreadSlot slot, ThreadRecordCopy* copy) {
  SpinLockGuard guard(g_register_lock);
  if (raw(slot) == 0 || raw(slot) >= g_slot_end) return false;
  const ThreadRecord& record = record_at(raw(slot));
  copy->incarnation = record.incarnation;
  copy->tid = record.tid;
  copy->exited = record.exited.load(std::memory_order_acquire);
  memcpy(copy->exit_name, record.exit_name, kThreadNameSize);
  memcpy(copy->given_name, record.given_name, kGivenThreadNameSize);
  return true;
}

void thread_give_name(ThreadState* state, const char* name) {
  SpinLockGuard guard(g_register_lock);
  char* given = record_at(raw(state->slot)).given_name;
  size_t length = strnlen(name, kGivenThreadNameSize - 1);
  // A longer name is cut where a UTF-8 character begins.
  if (name[length] != '\0') {
    while (length > 0 && (static_cast<unsigned char>(name[length]) & 0xc0) == 0x80) --length;
  }
  memcpy(given, name, length);
  given[length] = '\0';
}

void thread_slot_release(ThreadSlot slot, uint32_t incarnation) {
  SpinLockGuard guard(g_register_lock);
  if (raw(slot) == 0 || raw(slot) >= g_slot_end || record_at(raw(slot)).incarnation != incarnation) return;
  record_at(raw(slot)).incarnation = 0;
  g_free_slots[g_free_count++] = raw(slot);
}

void thread_registry_before_fork() { g_register_lock.lock(); }
void thread_registry_after_fork_parent() { g_register_lock.unlock(); }

void thread_registry_after_fork_child() {
  g_register_lock.reset_after_fork();
  ThreadState* self = leakscope_tls_thread;
  for (uint32_t slot = 1; slot < g_slot_end; ++slot) {
    if (self != nullptr && raw(self->slot) == slot) continue;
    ThreadRecord& record = record_at(slot);
    if (record.incarnation != 0 && !record.exited.load(std::memory_order_relaxed)) {
      record.exit_name[0] = '\0';
      record.exited.store(true, std::memory_order_release);
    }
  }
  if (self != nullptr) {
    self->tid = sys::get_tid();
    record_at(raw(self->slot)).tid = self->tid;
  }
}

}  // namespace leakscope::internal
