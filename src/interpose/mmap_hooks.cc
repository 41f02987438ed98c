// Handlers for mapped memory: mmap, mmap64, munmap, mremap, mprotect (domain mmap) and brk, sbrk
// (domain brk). Sizes are whole pages, as the kernel maps them. glibc's malloc maps memory through
// internal calls these hooks never see, so heap bytes are not counted twice.
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/recorder.h"
#include "core/runtime.h"
#include "core/stack_capture.h"
#include "core/sys.h"
#include "core/triple_registry.h"
#include "interpose/hooks.h"

namespace leakscope::internal {
namespace {

uintptr_t round_to_page(size_t length) {
  size_t page = sys::page_size();
  return (length + page - 1) & ~(page - 1);
}

bool page_aligned(const void* address) {
  return (reinterpret_cast<uintptr_t>(address) & (sys::page_size() - 1)) == 0;
}

// A PROT_NONE mapping reserves address space (Go's heap arenas, allocators' reservations): it is
// counted apart, and becomes memory when made accessible (mprotect, or an mmap MAP_FIXED over it).
template <typename Call>
LS_ALWAYS_INLINE void* map_recorded(size_t length, int protection, Call&& call) {
  if (!hook_should_record()) return call();
  void* result = call();
  if (result != MAP_FAILED) {
    Bookkeeping record;
    recorder_map(Domain::kMmap, reinterpret_cast<uintptr_t>(result), round_to_page(length), protection == PROT_NONE);
  }
  return result;
}

}  // namespace

void* handle_mmap(void* address, size_t length, int protection, int flags, int fd, off_t offset) {
  return map_recorded(length, protection, [&] {
    if (g_real.mmap == nullptr) {
      return reinterpret_cast<void*>(syscall(SYS_mmap, address, length, protection, flags, fd, offset));
    }
    return g_real.mmap(address, length, protection, flags, fd, offset);
  });
}

void* handle_mmap64(void* address, size_t length, int protection, int flags, int fd, off64_t offset) {
  return map_recorded(length, protection, [&] {
    if (g_real.mmap64 == nullptr) {
      return reinterpret_cast<void*>(syscall(SYS_mmap, address, length, protection, flags, fd, offset));
    }
    return g_real.mmap64(address, length, protection, flags, fd, offset);
  });
}

int handle_munmap(void* address, size_t length) {
  auto call = [&] {
    return g_real.munmap != nullptr ? g_real.munmap(address, length)
                                    : static_cast<int>(syscall(SYS_munmap, address, length));
  };
  if (!hook_should_record()) return call();
  // Recorded first, like free; an unaligned or empty range is refused by the kernel anyway.
  if (length != 0 && page_aligned(address)) {
    Bookkeeping record;
    recorder_unmap(reinterpret_cast<uintptr_t>(address), round_to_page(length));
  }
  return call();
}

void* handle_mremap(void* old_address, size_t old_length, size_t new_length, int flags, void* new_address) {
  auto call = [&] {
    return g_real.mremap != nullptr ? g_real.mremap(old_address, old_length, new_length, flags, new_address)
                                    : reinterpret_cast<void*>(syscall(SYS_mremap, old_address, old_length,
                                                                      new_length, flags, new_address));
  };
  if (!hook_should_record()) return call();
  TakenRange taken;
  {
    Bookkeeping record;
    recorder_take_range(reinterpret_cast<uintptr_t>(old_address), round_to_page(old_length), &taken);
  }
  void* result = call();
  Bookkeeping record;
  if (result == MAP_FAILED) {
    recorder_restore_range(taken);
  } else {
    Domain domain = Domain::kMmap;
    bool reserved = taken.count > 0;
    for (int i = 0; i < taken.count; ++i) reserved &= taken.cuts[i].removed.triple == kReservedRange;
    if (taken.count > 0) {
      const TripleEntry* owner = triple_get(taken.cuts[0].removed.triple);
      if (owner != nullptr) domain = owner->site->domain;
    }
    recorder_count_range_freed(taken);
    recorder_map(domain, reinterpret_cast<uintptr_t>(result), round_to_page(new_length), reserved);
  }
  return result;
}

int handle_mprotect(void* address, size_t length, int protection) {
  if (!hook_should_record()) return g_real.mprotect(address, length, protection);
  int result = g_real.mprotect(address, length, protection);
  if (result == 0 && length != 0 && page_aligned(address)) {
    Bookkeeping record;
    recorder_protect(reinterpret_cast<uintptr_t>(address), round_to_page(length), protection != PROT_NONE);
  }
  return result;
}

void* handle_sbrk(intptr_t increment) {
  if (!hook_should_record()) return g_real.sbrk(increment);
  void* previous = g_real.sbrk(increment);
  if (previous != reinterpret_cast<void*>(-1) && increment != 0) {
    Bookkeeping record;
    uintptr_t old_end = reinterpret_cast<uintptr_t>(previous);
    if (increment > 0) {
      recorder_map(Domain::kBrk, old_end, static_cast<size_t>(increment));
    } else {
      recorder_unmap(old_end - static_cast<uintptr_t>(-increment), static_cast<size_t>(-increment));
    }
  }
  return previous;
}

int handle_brk(void* end) {
  if (!hook_should_record()) return g_real.brk(end);
  void* before = g_real.sbrk != nullptr ? g_real.sbrk(0) : reinterpret_cast<void*>(-1);
  int result = g_real.brk(end);
  if (result == 0 && before != reinterpret_cast<void*>(-1)) {
    Bookkeeping record;
    uintptr_t old_end = reinterpret_cast<uintptr_t>(before);
    uintptr_t new_end = reinterpret_cast<uintptr_t>(end);
    if (new_end > old_end) recorder_map(Domain::kBrk, old_end, new_end - old_end);
    if (new_end < old_end) recorder_unmap(new_end, old_end - new_end);
  }
  return result;
}

}  // namespace leakscope::internal

// mremap is variadic: the fifth argument exists only with MREMAP_FIXED (or MREMAP_DONTUNMAP).
LS_EXPORT void* mremap(void* old_address, size_t old_length, size_t new_length, int flags, ...) noexcept {
  leakscope::internal::HookCaller caller(__builtin_return_address(0));
  void* new_address = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list arguments;
    va_start(arguments, flags);
    new_address = va_arg(arguments, void*);
    va_end(arguments);
  }
  return leakscope::internal::handle_mremap(old_address, old_length, new_length, flags, new_address);
}
