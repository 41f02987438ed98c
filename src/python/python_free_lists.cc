#include "python/python_free_lists.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "core/parked_blocks.h"
#include "core/recorder.h"
#include "core/runtime.h"
#include "interpose/hook_guard.h"

namespace leakscope::internal {
namespace {

// From CPython 3.10-3.13's object.h and cpython/object.h (a build without Py_TRACE_REFS): where
// PyTypeObject keeps tp_name and tp_dealloc, and the collector's header before a tuple.
constexpr size_t kTypeNameOffset = 24;
constexpr size_t kTypeDestructorOffset = 48;
constexpr uintptr_t kGcHeaderBytes = 16;  // sizeof(PyGC_Head)

using Destructor = void (*)(void* object);
using ReferenceCount = intptr_t;  // ob_refcnt, an object's first word

Destructor g_tuple_destructor = nullptr;

// destroy_tuple() runs CPython's tuple destructor, watching this thread's frees for the tuple's
// block: one not freed was put on the free list, or left for later by the interpreter's trashcan
// (freed then, from the free-list stack). Watched, not compared with the last free: destructors the
// trashcan runs after the tuple's free may allocate again at its address.
void destroy_tuple(void* object) {
  uintptr_t block = reinterpret_cast<uintptr_t>(object) - kGcHeaderBytes;
  FreeWatch outer = recorder_watch_free(block);
  g_tuple_destructor(object);
  bool freed = recorder_watched_freed();
  recorder_end_watch(outer);
  if (freed || !hook_should_record()) return;
  Bookkeeping record;
  recorder_park(reinterpret_cast<void*>(block));
}

// tuple_in_use() tells whether a tuple kept on a free list was handed out again: its reference
// count stays 0 on the list, and the interpreter sets it to 1 when it hands the tuple out.
bool tuple_in_use(uintptr_t block) {
  const auto* reference_count = reinterpret_cast<const ReferenceCount*>(block + kGcHeaderBytes);
  return __atomic_load_n(reference_count, __ATOMIC_RELAXED) != 0;
}

}  // namespace

bool python_free_lists_watch(void* scope) {
  auto* type = static_cast<uint8_t*>(dlsym(scope, "PyTuple_Type"));
  if (type == nullptr) return false;
  const char* name;
  memcpy(&name, type + kTypeNameOffset, sizeof(name));
  Destructor destructor;
  memcpy(&destructor, type + kTypeDestructorOffset, sizeof(destructor));
  if (name == nullptr || strcmp(name, "tuple") != 0 || destructor == nullptr) return false;
  g_tuple_destructor = destructor;
  parked_blocks_enable(tuple_in_use);
  Destructor ours = destroy_tuple;
  memcpy(type + kTypeDestructorOffset, &ours, sizeof(ours));
  return true;
}

}  // namespace leakscope::internal
