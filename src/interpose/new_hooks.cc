// Handlers for operator new and delete in every form (domain heap). libstdc++'s operator new
// calls malloc, which then passes through (it runs inside this hook's AllocatorCall); jemalloc's,
// tcmalloc's and mimalloc's never do, and are seen only here.
//
// A throwing operator new is served by the real *nothrow* one: an exception thrown through this
// hook would skip the end of its AllocatorCall. Only when that finds no memory is the real
// throwing one called, outside every scope, to run the program's new-handler loop and throw
// std::bad_alloc; what it may still find then is not recorded (its delete is then ignored).
//
// The real functions are found when first needed if the C++ runtime came after leakscope's init
// (a Python process that imports torch loads libstdc++ late).
#include <dlfcn.h>
#include <stddef.h>

#include <atomic>

#include "core/recorder.h"
#include "core/runtime.h"
#include "interpose/hooks.h"
#include "interpose/recorded_calls.h"

namespace leakscope::internal {
namespace {

// What implementations read of std::nothrow: nothing; any address stands for it.
constinit const char g_nothrow = 0;

// real() is the real function in `slot`, resolving it the first time it is needed. A lookup that
// found nothing is made again only once another library has been loaded (`missed` holds the count
// it missed at, plus one): a C++ runtime loaded RTLD_LOCAL, as Python loads torch's, is never
// found through RTLD_NEXT, and a failed dlsym on every operator new cost a Python process that
// imports torch a tenth of its time. Until then the fallback serves, as the runtime's own would.
template <typename Function>
Function real(Function& slot, const char* name, std::atomic<uint32_t>& missed) {
  Function function = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
  if (LS_LIKELY(function != nullptr)) return function;
  uint32_t loaded = real_functions_libraries_loaded();
  if (missed.load(std::memory_order_relaxed) == loaded + 1) return nullptr;
  {
    Bookkeeping bookkeeping;  // what dlsym allocates is not the program's
    function = reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
  }
  if (function == nullptr) {
    missed.store(loaded + 1, std::memory_order_relaxed);
    return nullptr;
  }
  __atomic_store_n(&slot, function, __ATOMIC_RELEASE);
  return function;
}

// Each use has its own record of a miss.
#define LS_REAL(name) real(g_real.name, #name, [] () -> std::atomic<uint32_t>& { \
  static constinit std::atomic<uint32_t> missed{0};                               \
  return missed;                                                                  \
}())

template <typename Throwing, typename Nothrow>
LS_ALWAYS_INLINE void* new_recorded(size_t size, Throwing&& throwing, Nothrow&& nothrow) {
  if (recorder_skips_alloc(size)) {
    // Inside an AllocatorCall as recorded_calls.h says; a new_handler the call runs when memory
    // is out is inside it too.
    AllocatorCall inside;
    return throwing();
  }
  if (!hook_should_record()) return throwing();
  void* block;
  {
    AllocatorCall inside;
    block = nothrow();
  }
  if (block == nullptr) return throwing();
  Bookkeeping record;
  recorder_alloc(Domain::kHeap, block, size);
  return block;
}

// delete_recorded() is free's shape (recorded_calls.h) for a pointer that may be the bootstrap
// pool's.
template <typename Delete>
LS_ALWAYS_INLINE void delete_recorded(void* pointer, Delete&& call) {
  if (pointer == nullptr || bootstrap_owns(pointer)) return;
  free_recorded(pointer, call);
}

// Fallbacks for a C++ runtime without the form asked for: the plainer form, then malloc and free.
void* plain_new(size_t size) {
  auto function = LS_REAL(_ZnwmRKSt9nothrow_t);
  return function != nullptr ? function(size, &g_nothrow) : g_real.malloc(size);
}

void plain_delete(void* pointer) {
  auto function = LS_REAL(_ZdlPv);
  function != nullptr ? function(pointer) : g_real.free(pointer);
}

void* aligned_new(size_t size, size_t alignment) {
  auto function = LS_REAL(_ZnwmSt11align_val_tRKSt9nothrow_t);
  if (function != nullptr) return function(size, alignment, &g_nothrow);
  void* block = nullptr;
  return g_real.posix_memalign(&block, alignment, size) == 0 ? block : nullptr;
}

void aligned_delete(void* pointer, size_t alignment) {
  auto function = LS_REAL(_ZdlPvSt11align_val_t);
  function != nullptr ? function(pointer, alignment) : g_real.free(pointer);
}

}  // namespace

void* handle__Znwm(size_t size) {
  return new_recorded(
      size, [&] { auto f = LS_REAL(_Znwm); return f != nullptr ? f(size) : plain_new(size); },
      [&] { return plain_new(size); });
}

void* handle__Znam(size_t size) {
  auto nothrow = [&] { auto f = LS_REAL(_ZnamRKSt9nothrow_t); return f != nullptr ? f(size, &g_nothrow) : plain_new(size); };
  return new_recorded(size, [&] { auto f = LS_REAL(_Znam); return f != nullptr ? f(size) : nothrow(); }, nothrow);
}

void* handle__ZnwmRKSt9nothrow_t(size_t size, const void*) {
  return allocate_recorded(size, [&] { return plain_new(size); });
}

void* handle__ZnamRKSt9nothrow_t(size_t size, const void*) {
  return allocate_recorded(size, [&] {
    auto f = LS_REAL(_ZnamRKSt9nothrow_t);
    return f != nullptr ? f(size, &g_nothrow) : plain_new(size);
  });
}

void* handle__ZnwmSt11align_val_t(size_t size, size_t alignment) {
  return new_recorded(
      size, [&] { auto f = LS_REAL(_ZnwmSt11align_val_t); return f != nullptr ? f(size, alignment) : aligned_new(size, alignment); },
      [&] { return aligned_new(size, alignment); });
}

void* handle__ZnamSt11align_val_t(size_t size, size_t alignment) {
  auto nothrow = [&] {
    auto f = LS_REAL(_ZnamSt11align_val_tRKSt9nothrow_t);
    return f != nullptr ? f(size, alignment, &g_nothrow) : aligned_new(size, alignment);
  };
  return new_recorded(
      size, [&] { auto f = LS_REAL(_ZnamSt11align_val_t); return f != nullptr ? f(size, alignment) : nothrow(); }, nothrow);
}

void* handle__ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment, const void*) {
  return allocate_recorded(size, [&] { return aligned_new(size, alignment); });
}

void* handle__ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment, const void*) {
  return allocate_recorded(size, [&] {
    auto f = LS_REAL(_ZnamSt11align_val_tRKSt9nothrow_t);
    return f != nullptr ? f(size, alignment, &g_nothrow) : aligned_new(size, alignment);
  });
}

void handle__ZdlPv(void* pointer) {
  delete_recorded(pointer, [&] { plain_delete(pointer); });
}

void handle__ZdaPv(void* pointer) {
  delete_recorded(pointer, [&] { auto f = LS_REAL(_ZdaPv); f != nullptr ? f(pointer) : plain_delete(pointer); });
}

void handle__ZdlPvm(void* pointer, size_t size) {
  delete_recorded(pointer, [&] { auto f = LS_REAL(_ZdlPvm); f != nullptr ? f(pointer, size) : plain_delete(pointer); });
}

void handle__ZdaPvm(void* pointer, size_t size) {
  delete_recorded(pointer, [&] {
    auto f = LS_REAL(_ZdaPvm);
    if (f != nullptr) return f(pointer, size);
    auto unsized = LS_REAL(_ZdaPv);
    unsized != nullptr ? unsized(pointer) : plain_delete(pointer);
  });
}

void handle__ZdlPvSt11align_val_t(void* pointer, size_t alignment) {
  delete_recorded(pointer, [&] { aligned_delete(pointer, alignment); });
}

void handle__ZdaPvSt11align_val_t(void* pointer, size_t alignment) {
  delete_recorded(pointer, [&] {
    auto f = LS_REAL(_ZdaPvSt11align_val_t);
    f != nullptr ? f(pointer, alignment) : aligned_delete(pointer, alignment);
  });
}

void handle__ZdlPvmSt11align_val_t(void* pointer, size_t size, size_t alignment) {
  delete_recorded(pointer, [&] {
    auto f = LS_REAL(_ZdlPvmSt11align_val_t);
    f != nullptr ? f(pointer, size, alignment) : aligned_delete(pointer, alignment);
  });
}

void handle__ZdaPvmSt11align_val_t(void* pointer, size_t size, size_t alignment) {
  delete_recorded(pointer, [&] {
    auto f = LS_REAL(_ZdaPvmSt11align_val_t);
    f != nullptr ? f(pointer, size, alignment) : aligned_delete(pointer, alignment);
  });
}

void handle__ZdlPvRKSt9nothrow_t(void* pointer, const void*) {
  delete_recorded(pointer, [&] { plain_delete(pointer); });
}

void handle__ZdaPvRKSt9nothrow_t(void* pointer, const void*) {
  delete_recorded(pointer, [&] { auto f = LS_REAL(_ZdaPv); f != nullptr ? f(pointer) : plain_delete(pointer); });
}

void handle__ZdlPvSt11align_val_tRKSt9nothrow_t(void* pointer, size_t alignment, const void*) {
  delete_recorded(pointer, [&] { aligned_delete(pointer, alignment); });
}

void handle__ZdaPvSt11align_val_tRKSt9nothrow_t(void* pointer, size_t alignment, const void*) {
  delete_recorded(pointer, [&] {
    auto f = LS_REAL(_ZdaPvSt11align_val_t);
    f != nullptr ? f(pointer, alignment) : aligned_delete(pointer, alignment);
  });
}

}  // namespace leakscope::internal
