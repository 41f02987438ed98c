#include "core/task_registry.h"

#include <string.h>

#include "core/intern_table.h"

namespace leakscope::internal {
namespace {

// One entry per distinct name, counting how many ids that name has used.
struct TaskNameEntry {
  TaskNameEntry* next;
  uint64_t hash;
  uint32_t id;
  uint32_t name_length;
  std::atomic<uint32_t> distinct_ids;
  char name[];
};

constinit InternTable<TaskEntry> g_tasks;
constinit InternTable<TaskNameEntry> g_task_names;

uint64_t hash_name(const char* name, size_t length) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a, then mixed
  for (size_t i = 0; i < length; ++i) hash = (hash ^ static_cast<unsigned char>(name[i])) * 0x100000001b3ull;
  return hash_mix(hash);
}

template <typename Entry>
Entry* make_named(const char* name, size_t length) {
  auto* entry = static_cast<Entry*>(internal_alloc(sizeof(Entry) + length + 1));
  if (entry == nullptr) return nullptr;
  entry->name_length = static_cast<uint32_t>(length);
  memcpy(entry->name, name, length);
  entry->name[length] = '\0';
  return entry;
}

}  // namespace

bool task_registry_init() { return g_tasks.init(12) && g_task_names.init(10); }

TaskId task_intern(const char* name, uint64_t user_id) {
  if (name == nullptr || name[0] == '\0' || !g_tasks.ready()) return TaskId::kNone;
  size_t length = strnlen(name, kMaxTaskNameLength);
  uint64_t name_hash = hash_name(name, length);
  auto same_name = [&](const auto* candidate) {
    return candidate->name_length == length && memcmp(candidate->name, name, length) == 0;
  };
  auto same_task = [&](const TaskEntry* candidate) {
    return candidate->user_id == user_id && same_name(candidate);
  };
  if (TaskEntry* known = g_tasks.find(hash_mix(name_hash ^ user_id), same_task)) {
    return static_cast<TaskId>(known->id);
  }
  // Names made per request ("req-<id>", a per-call NVTX range) would grow without bound: past
  // kMaxTaskNames distinct ones, new names are one task.
  if (g_task_names.end_id() > kMaxTaskNames && g_task_names.find(name_hash, same_name) == nullptr &&
      strcmp(name, kOtherTaskNames) != 0) {
    return task_intern(kOtherTaskNames, 0);
  }
  TaskNameEntry* name_entry = g_task_names.find_or_insert(
      name_hash, same_name, [&] { return make_named<TaskNameEntry>(name, length); });
  if (name_entry == nullptr) return TaskId::kNone;
  if (user_id != 0 && name_entry->distinct_ids.fetch_add(1, std::memory_order_relaxed) >= kMaxIdsPerTaskName) {
    user_id = 0;
  }
  TaskEntry* entry = g_tasks.find_or_insert(hash_mix(name_hash ^ user_id), same_task, [&] {
    TaskEntry* made = make_named<TaskEntry>(name, length);
    if (made != nullptr) made->user_id = user_id;
    return made;
  });
  return entry == nullptr ? TaskId::kNone : static_cast<TaskId>(entry->id);
}

const TaskEntry* task_get(TaskId id) { return g_tasks.get(raw(id)); }
uint32_t task_end_id() { return g_tasks.end_id(); }

void task_registry_before_fork() {
  g_tasks.before_fork();
  g_task_names.before_fork();
}
void task_registry_after_fork_parent() {
  g_task_names.after_fork_parent();
  g_tasks.after_fork_parent();
}
void task_registry_after_fork_child() {
  g_task_names.after_fork_child();
  g_tasks.after_fork_child();
}

}  // namespace leakscope::internal
