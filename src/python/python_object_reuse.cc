#include "python/python_object_reuse.h"

#include <dlfcn.h>
#include <stdint.h>

#include "core/recorder.h"
#include "core/runtime.h"
#include "core/stack_capture.h"
#include "interpose/hook_guard.h"

namespace leakscope::internal {
namespace {

// From CPython 3.13's cpython/object.h and object.h.
constexpr int kRefTracerCreate = 0;  // PyRefTracer_CREATE
constexpr unsigned long kTypeHasGc = 1ul << 14;                  // Py_TPFLAGS_HAVE_GC
constexpr unsigned long kTypePreheader = (1ul << 3) | (1ul << 4);  // Py_TPFLAGS_MANAGED_WEAKREF | _DICT
constexpr uintptr_t kGcHeaderBytes = 16;                         // sizeof(PyGC_Head)
constexpr uintptr_t kPreheaderBytes = 2 * sizeof(void*);

using RefTracer = int (*)(void* object, int event, void* data);
using SetRefTracer = int (*)(RefTracer tracer, void* data);
using TypeFlags = unsigned long (*)(void* type);

TypeFlags g_type_flags = nullptr;

// block_of() is where the allocation holding `object` begins: the collector's header and a managed
// dict's or weak reference list's two pointers lie before it (_PyType_PreHeaderSize).
uintptr_t block_of(uintptr_t object) {
  void* type = *reinterpret_cast<void* const*>(object + sizeof(void*));  // ob_type
  unsigned long flags = g_type_flags(type);
  return object - ((flags & kTypeHasGc) != 0 ? kGcHeaderBytes : 0) - ((flags & kTypePreheader) != 0 ? kPreheaderBytes : 0);
}

int on_reference(void* object, int event, void*) {
  if (event != kRefTracerCreate) return 0;
  // Made from memory allocated for it just now: that block, the last this thread recorded, begins
  // at the object or one or two headers before it.
  uintptr_t address = reinterpret_cast<uintptr_t>(object);
  uintptr_t last = recorder_last_alloc();
  if (last == address || last == address - kGcHeaderBytes || last == address - kGcHeaderBytes - kPreheaderBytes) {
    return 0;
  }
  HookCaller caller(__builtin_return_address(0));
  if (!hook_should_record()) return 0;
  Bookkeeping record;
  recorder_renew(reinterpret_cast<void*>(block_of(address)));
  return 0;
}

}  // namespace

bool python_object_reuse_watch(void* scope) {
  auto set_tracer = reinterpret_cast<SetRefTracer>(dlsym(scope, "PyRefTracer_SetTracer"));
  g_type_flags = reinterpret_cast<TypeFlags>(dlsym(scope, "PyType_GetFlags"));
  if (set_tracer == nullptr || g_type_flags == nullptr) return false;
  return set_tracer(on_reference, nullptr) == 0;
}

}  // namespace leakscope::internal
