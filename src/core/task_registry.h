// File: task_registry.h
//
// Tasks: the unit of work a thread is doing, set by leakscope_task_begin(name, id) and ended by
// leakscope_task_end(), nestable per thread. A (name, id) pair is interned to a TaskId. Reports
// aggregate by name; to keep cardinality bounded, each name keeps at most kMaxIdsPerTaskName
// distinct ids, after which new ids of that name share the pair (name, 0).
#ifndef LEAKSCOPE_CORE_TASK_REGISTRY_H_
#define LEAKSCOPE_CORE_TASK_REGISTRY_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

constexpr uint32_t kMaxIdsPerTaskName = 64;
// At most this many distinct task names are kept apart; allocations under later new names go to
// the task kOtherTaskNames.
constexpr uint32_t kMaxTaskNames = 4096;
inline constexpr const char* kOtherTaskNames = "(more task names than leakscope keeps apart)";
constexpr uint32_t kMaxTaskNameLength = 255;

struct TaskEntry {
  TaskEntry* next;
  uint64_t hash;
  uint32_t id;
  uint32_t name_length;
  uint64_t user_id;
  char name[];  // name_length bytes, NUL-terminated
};

bool task_registry_init();

// task_intern() returns the TaskId of (name, user_id); names longer than kMaxTaskNameLength are
// cut. TaskId::kNone for a null or empty name or when memory is exhausted. Thread-safe.
TaskId task_intern(const char* name, uint64_t user_id);

// task_get() returns the task with `id`, or nullptr. Lock-free.
const TaskEntry* task_get(TaskId id);
uint32_t task_end_id();

void task_registry_before_fork();
void task_registry_after_fork_parent();
void task_registry_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_TASK_REGISTRY_H_
