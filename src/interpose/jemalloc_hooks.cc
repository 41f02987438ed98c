// Handlers for jemalloc's own API (domain heap): mallocx, rallocx, xallocx, dallocx and sdallocx,
// recorded as the malloc family is. A program reaches them only when it was linked with jemalloc
// or declares them weak (and then finds leakscope's exports): without jemalloc below leakscope,
// each is served by the malloc family's handler that does the same.
#include <string.h>

#include "interpose/hooks.h"
#include "interpose/recorded_calls.h"

namespace leakscope::internal {
namespace {

// The flags' fields (jemalloc.h): MALLOCX_LG_ALIGN(lg) is lg in the low six bits, MALLOCX_ZERO a bit.
constexpr int kLgAlignMask = 0x3f;
constexpr int kZero = 0x40;
constexpr size_t kMallocAlignment = 16;

size_t alignment_of(int flags) { return (flags & kLgAlignMask) == 0 ? 0 : size_t{1} << (flags & kLgAlignMask); }

// allocate_from_libc() is mallocx through the malloc family.
void* allocate_from_libc(size_t size, int flags) {
  size_t alignment = alignment_of(flags);
  if (alignment <= kMallocAlignment) return (flags & kZero) != 0 ? handle_calloc(1, size) : handle_malloc(size);
  void* block = nullptr;
  if (handle_posix_memalign(&block, alignment, size) != 0) return nullptr;
  if ((flags & kZero) != 0) memset(block, 0, size);
  return block;
}

// resize_from_libc() is rallocx through the malloc family: realloc keeps malloc's alignment only.
void* resize_from_libc(void* pointer, size_t size, int flags) {
  size_t old_size = handle_malloc_usable_size(pointer);
  if (alignment_of(flags) > kMallocAlignment) {
    void* moved = allocate_from_libc(size, flags & ~kZero);
    if (moved == nullptr) return nullptr;
    memcpy(moved, pointer, old_size < size ? old_size : size);
    handle_free(pointer);
    pointer = moved;
  } else {
    pointer = handle_realloc(pointer, size);
    if (pointer == nullptr) return nullptr;
  }
  if ((flags & kZero) != 0 && size > old_size) memset(static_cast<char*>(pointer) + old_size, 0, size - old_size);
  return pointer;
}

}  // namespace

void* handle_mallocx(size_t size, int flags) {
  if (g_real.mallocx == nullptr) return allocate_from_libc(size, flags);
  return allocate_recorded(size, [&] { return g_real.mallocx(size, flags); });
}

void* handle_rallocx(void* pointer, size_t size, int flags) {
  if (g_real.rallocx == nullptr || bootstrap_owns(pointer)) return resize_from_libc(pointer, size, flags);
  return resize_recorded(pointer, size, [&] { return g_real.rallocx(pointer, size, flags); });
}

// xallocx grows or shrinks a block where it lies and returns its size then: at least `size` when
// it could, the block as it was when it could not. The block is recorded at the size asked.
size_t handle_xallocx(void* pointer, size_t size, size_t extra, int flags) {
  // The malloc family resizes a block in place only through realloc, which may move it.
  if (g_real.xallocx == nullptr || bootstrap_owns(pointer)) return handle_malloc_usable_size(pointer);
  size_t resized = 0;
  resize_recorded(pointer, size, [&]() -> void* {
    resized = g_real.xallocx(pointer, size, extra, flags);
    return resized >= size ? pointer : nullptr;
  });
  return resized;
}

void handle_dallocx(void* pointer, int flags) {
  if (g_real.dallocx == nullptr || bootstrap_owns(pointer)) return handle_free(pointer);
  free_recorded(pointer, [&] { g_real.dallocx(pointer, flags); });
}

void handle_sdallocx(void* pointer, size_t size, int flags) {
  if (g_real.sdallocx == nullptr || bootstrap_owns(pointer)) return handle_free(pointer);
  free_recorded(pointer, [&] { g_real.sdallocx(pointer, size, flags); });
}

}  // namespace leakscope::internal
