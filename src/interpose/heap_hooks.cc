// Handlers for the malloc family (domain heap). operator new and delete have handlers of their
// own (new_hooks.cc); the malloc that libstdc++'s operator new makes inside them passes through.
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/recorder.h"
#include "core/runtime.h"
#include "core/sys.h"
#include "interpose/hooks.h"
#include "interpose/recorded_calls.h"

namespace leakscope::internal {
namespace {

constexpr size_t kMinAlignment = 16;

// A block from the bootstrap pool moves to the real allocator on its first realloc.
void* realloc_from_bootstrap(void* pointer, size_t size) {
  void* moved = handle_malloc(size);
  if (moved != nullptr) {
    size_t old_size = bootstrap_size(pointer);
    memcpy(moved, pointer, old_size < size ? old_size : size);
  }
  return moved;
}

size_t round_to_page(size_t size) {
  size_t page = sys::page_size();
  return size == 0 ? page : (size + page - 1) & ~(page - 1);
}

}  // namespace

void* handle_malloc(size_t size) {
  return allocate_recorded(size, [&] {
    return g_real.malloc != nullptr ? g_real.malloc(size) : bootstrap_alloc(size, kMinAlignment);
  });
}

void handle_free(void* pointer) {
  if (pointer == nullptr || bootstrap_owns(pointer)) return;
  free_recorded(pointer, [&] { g_real.free(pointer); });
}

void* handle_calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) total = 0;  // the real calloc fails it
  return allocate_recorded(total, [&] {
    return g_real.calloc != nullptr ? g_real.calloc(count, size) : bootstrap_alloc(total, kMinAlignment);
  });
}

void* handle_realloc(void* pointer, size_t size) {
  if (bootstrap_owns(pointer)) return realloc_from_bootstrap(pointer, size);
  return resize_recorded(pointer, size, [&] { return g_real.realloc(pointer, size); });
}

void* handle_reallocarray(void* pointer, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (bootstrap_owns(pointer)) return realloc_from_bootstrap(pointer, total);
  return resize_recorded(pointer, total, [&] {
    return g_real.reallocarray != nullptr ? g_real.reallocarray(pointer, count, size) : g_real.realloc(pointer, total);
  });
}

int handle_posix_memalign(void** out, size_t alignment, size_t size) {
  int status = 0;
  allocate_recorded(size, [&]() -> void* {
    if (g_real.posix_memalign == nullptr) {
      *out = bootstrap_alloc(size, alignment);
      status = *out != nullptr ? 0 : ENOMEM;
    } else {
      status = g_real.posix_memalign(out, alignment, size);
    }
    return status == 0 ? *out : nullptr;
  });
  return status;
}

void* handle_aligned_alloc(size_t alignment, size_t size) {
  return allocate_recorded(size, [&] {
    return g_real.aligned_alloc != nullptr ? g_real.aligned_alloc(alignment, size) : bootstrap_alloc(size, alignment);
  });
}

void* handle_memalign(size_t alignment, size_t size) {
  return allocate_recorded(size, [&] {
    return g_real.memalign != nullptr ? g_real.memalign(alignment, size) : bootstrap_alloc(size, alignment);
  });
}

void* handle_valloc(size_t size) {
  return allocate_recorded(size, [&] {
    return g_real.valloc != nullptr ? g_real.valloc(size) : bootstrap_alloc(size, sys::page_size());
  });
}

// pvalloc promises whole pages, so the block is that many bytes.
void* handle_pvalloc(size_t size) {
  size_t pages = round_to_page(size);
  return allocate_recorded(pages, [&] {
    return g_real.pvalloc != nullptr ? g_real.pvalloc(size) : bootstrap_alloc(pages, sys::page_size());
  });
}

size_t handle_malloc_usable_size(void* pointer) {
  if (pointer == nullptr) return 0;
  if (bootstrap_owns(pointer)) return bootstrap_size(pointer);
  return g_real.malloc_usable_size != nullptr ? g_real.malloc_usable_size(pointer) : 0;
}

}  // namespace leakscope::internal
