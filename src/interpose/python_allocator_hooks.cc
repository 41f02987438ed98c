#include "interpose/python_allocator_hooks.h"

#include <dlfcn.h>
#include <stddef.h>

#include "core/deferred_records.h"
#include "core/stack_capture.h"
#include "core/stream_format.h"
#include "core/thread_registry.h"
#include "interpose/recorded_calls.h"

namespace leakscope::internal {
namespace {

// CPython's PyMemAllocatorEx, unchanged since 3.5.
struct PyMemAllocator {
  void* ctx;
  void* (*malloc)(void* ctx, size_t size);
  void* (*calloc)(void* ctx, size_t count, size_t size);
  void* (*realloc)(void* ctx, void* pointer, size_t size);
  void (*free)(void* ctx, void* pointer);
};

// PyMemAllocatorDomain: RAW is malloc itself, which the malloc hooks see already.
constexpr int kDomainMem = 1;
constexpr int kDomainObject = 2;

using GetAllocator = void (*)(int domain, PyMemAllocator* allocator);
using SetAllocator = void (*)(int domain, PyMemAllocator* allocator);

// The allocators wrapped, by domain; each wrapper's context points at its domain's.
PyMemAllocator g_wrapped[kDomainObject + 1];

// Each wrapper is entered through a pointer from PyObject_Malloc and its kin, and notes its caller
// as an exported hook does (the interpreter's function that allocates, for start-up stacks). Their
// calls hold the interpreter's lock: blocks in arenas are recorded through the queue.
void* recorded_malloc(void* context, size_t size) {
  HookCaller caller(__builtin_return_address(0));
  const auto* wrapped = static_cast<const PyMemAllocator*>(context);
  return allocate_recorded<true>(size, [&] { return wrapped->malloc(wrapped->ctx, size); });
}

void* recorded_calloc(void* context, size_t count, size_t size) {
  HookCaller caller(__builtin_return_address(0));
  const auto* wrapped = static_cast<const PyMemAllocator*>(context);
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) total = 0;  // the wrapped calloc fails it
  return allocate_recorded<true>(total, [&] { return wrapped->calloc(wrapped->ctx, count, size); });
}

void* recorded_realloc(void* context, void* pointer, size_t size) {
  HookCaller caller(__builtin_return_address(0));
  const auto* wrapped = static_cast<const PyMemAllocator*>(context);
  return resize_recorded<true>(pointer, size, [&] { return wrapped->realloc(wrapped->ctx, pointer, size); });
}

void recorded_free(void* context, void* pointer) {
  HookCaller caller(__builtin_return_address(0));
  const auto* wrapped = static_cast<const PyMemAllocator*>(context);
  free_recorded<true>(pointer, [&] { wrapped->free(wrapped->ctx, pointer); });
}

// CPython's PyObjectArenaAllocator, unchanged since 3.4.
struct PyArenaAllocator {
  void* ctx;
  void* (*alloc)(void* ctx, size_t size);
  void (*free)(void* ctx, void* pointer, size_t size);
};

using GetArenaAllocator = void (*)(PyArenaAllocator* allocator);
using SetArenaAllocator = void (*)(PyArenaAllocator* allocator);

PyArenaAllocator g_wrapped_arenas;
// Set once the objects are recorded one by one (python_allocator_hooks_install()): an arena for them
// is then mapped inside a recorded call, and what else comes through the arena allocator is not one.
bool g_objects_recorded = false;

// marked_arena_alloc() maps an arena as the interpreter's allocator does, its mapping recorded at
// the arenas' marker stack rather than at whatever Python line needed a new one; or, where the
// objects are recorded, a chunk of the frames' data stack, at its own marker.
void* marked_arena_alloc(void* context, size_t size) {
  const auto* wrapped = static_cast<const PyArenaAllocator*>(context);
  ThreadState* thread = thread_current();
  if (thread == nullptr) return wrapped->alloc(wrapped->ctx, size);
  uintptr_t outer = thread->stack_marker;
  thread->stack_marker = g_objects_recorded ? kPythonFrameStackFrame : kPythonArenaFrame;
  void* arena = wrapped->alloc(wrapped->ctx, size);
  thread->stack_marker = outer;
  if (arena != nullptr) deferred_records_add_range(reinterpret_cast<uintptr_t>(arena), size);
  return arena;
}

// wrapped_arena_free() applies what is queued of the arena's blocks before its memory goes back.
void wrapped_arena_free(void* context, void* pointer, size_t size) {
  const auto* wrapped = static_cast<const PyArenaAllocator*>(context);
  deferred_records_remove_range(reinterpret_cast<uintptr_t>(pointer), size);
  wrapped->free(wrapped->ctx, pointer, size);
}

}  // namespace

bool python_arena_hooks_install(void* scope) {
  auto get = reinterpret_cast<GetArenaAllocator>(dlsym(scope, "PyObject_GetArenaAllocator"));
  auto set = reinterpret_cast<SetArenaAllocator>(dlsym(scope, "PyObject_SetArenaAllocator"));
  if (get == nullptr || set == nullptr) return false;
  get(&g_wrapped_arenas);
  PyArenaAllocator wrapper{&g_wrapped_arenas, marked_arena_alloc, wrapped_arena_free};
  set(&wrapper);
  return true;
}

bool python_allocator_hooks_install(void* scope) {
  auto get = reinterpret_cast<GetAllocator>(dlsym(scope, "PyMem_GetAllocator"));
  auto set = reinterpret_cast<SetAllocator>(dlsym(scope, "PyMem_SetAllocator"));
  if (get == nullptr || set == nullptr) return false;
  recorder_queue_serialized();
  for (int domain : {kDomainMem, kDomainObject}) {
    get(domain, &g_wrapped[domain]);
    PyMemAllocator wrapper{&g_wrapped[domain], recorded_malloc, recorded_calloc, recorded_realloc, recorded_free};
    set(domain, &wrapper);
  }
  g_objects_recorded = true;
  return true;
}

}  // namespace leakscope::internal
