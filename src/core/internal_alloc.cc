#include "core/internal_alloc.h"

#include <atomic>

#include "core/memory_budget.h"
#include "core/spin_lock.h"
#include "core/sys.h"

namespace leakscope::internal {
namespace {

constexpr size_t kMinClassShift = 4;   // 16 bytes
constexpr size_t kMaxClassShift = 11;  // 2 KiB
constexpr size_t kClassCount = kMaxClassShift - kMinClassShift + 1;
constexpr size_t kChunkSize = 64 * 1024;
// Large blocks given back are kept mapped, up to these limits, for the next request of the same
// size: the writer asks for the same scratch sizes at every snapshot, and a dlopen's walk of the
// loader's list for the same again. Unmapping them each time costs the program's threads a TLB
// shootdown and the mmap lock, and every reuse of a fresh mapping two page faults a page.
constexpr int kKeptMappings = 32;
constexpr size_t kKeptBytesLimit = size_t{8} << 20;

struct FreeBlock {
  FreeBlock* next;
};

// A 64 KiB chunk that blocks are cut from, front to back.
struct Chunk {
  char* cursor = nullptr;
  char* end = nullptr;
};

struct KeptMapping {
  void* memory;
  size_t size;
};

struct Allocator {
  SpinLock lock;
  FreeBlock* free_lists[kClassCount] = {};
  KeptMapping kept[kKeptMappings] = {};
  size_t kept_bytes = 0;
  Chunk classes;    // blocks of the size classes
  Chunk permanent;  // internal_alloc_permanent()
  std::atomic<size_t> mapped_bytes{0};
  std::atomic<size_t> peak_mapped_bytes{0};
};

// constinit: hooks use the allocator while other libraries' constructors run, before this
// library's own; a dynamic initializer would then reset the lock and the mapped-bytes count.
constinit Allocator g_allocator;

size_t class_index(size_t size) {
  size_t shift = kMinClassShift;
  while ((size_t{1} << shift) < size) ++shift;
  return shift - kMinClassShift;
}

size_t round_to_pages(size_t size) {
  size_t page = sys::page_size();
  return (size + page - 1) & ~(page - 1);
}

void* map_counted(size_t size, bool populate = false) {
  void* memory = sys::map_anonymous(size, populate);
  if (memory == nullptr) return nullptr;
  size_t mapped = g_allocator.mapped_bytes.fetch_add(size, std::memory_order_relaxed) + size;
  size_t peak = g_allocator.peak_mapped_bytes.load(std::memory_order_relaxed);
  while (mapped > peak && !g_allocator.peak_mapped_bytes.compare_exchange_weak(peak, mapped, std::memory_order_relaxed)) {
  }
  memory_budget_observe(mapped);
  return memory;
}

// carve() cuts `size` bytes from `chunk`, starting a new chunk when the old one is short; its tail
// is abandoned (at most a quarter of a chunk, as requests are at most that big). Lock held.
void* carve(Chunk& chunk, size_t size) {
  if (chunk.cursor == nullptr || static_cast<size_t>(chunk.end - chunk.cursor) < size) {
    char* fresh = static_cast<char*>(map_counted(kChunkSize));
    if (fresh == nullptr) return nullptr;
    chunk.cursor = fresh;
    chunk.end = fresh + kChunkSize;
  }
  void* block = chunk.cursor;
  chunk.cursor += size;
  return block;
}

// take_kept() returns a kept mapping of exactly `mapped` bytes, zeroed, or nullptr.
void* take_kept(size_t mapped) {
  void* memory = nullptr;
  {
    SpinLockGuard guard(g_allocator.lock);
    for (KeptMapping& kept : g_allocator.kept) {
      if (kept.memory == nullptr || kept.size != mapped) continue;
      memory = kept.memory;
      kept.memory = nullptr;
      g_allocator.kept_bytes -= mapped;
      break;
    }
  }
  if (memory != nullptr) memset(memory, 0, mapped);
  return memory;
}

// keep() holds a mapping given back for reuse; false when the limits are reached.
bool keep(void* memory, size_t mapped) {
  SpinLockGuard guard(g_allocator.lock);
  if (g_allocator.kept_bytes + mapped > kKeptBytesLimit) return false;
  for (KeptMapping& kept : g_allocator.kept) {
    if (kept.memory != nullptr) continue;
    kept = KeptMapping{memory, mapped};
    g_allocator.kept_bytes += mapped;
    return true;
  }
  return false;
}

// allocate() is internal_alloc(), mapping a large block with its pages populated when asked.
void* allocate(size_t size, bool populate) {
  if (size == 0) size = 1;
  if (size > (size_t{1} << kMaxClassShift)) {
    size_t mapped = round_to_pages(size);
    void* kept = take_kept(mapped);  // its pages are in already: they were written when zeroed
    return kept != nullptr ? kept : map_counted(mapped, populate);
  }

  size_t index = class_index(size);
  size_t block_size = size_t{1} << (index + kMinClassShift);
  SpinLockGuard guard(g_allocator.lock);
  FreeBlock* reused = g_allocator.free_lists[index];
  if (reused != nullptr) {
    g_allocator.free_lists[index] = reused->next;
    memset(static_cast<void*>(reused), 0, block_size);
    return reused;
  }
  return carve(g_allocator.classes, block_size);
}

}  // namespace

void* internal_alloc(size_t size) { return allocate(size, false); }

void* internal_alloc_populated(size_t size) { return allocate(size, true); }

void* internal_alloc_permanent(size_t size) {
  size = (size + 15) & ~size_t{15};
  if (size > kChunkSize / 4) return internal_alloc(size);  // large: mapped on its own
  SpinLockGuard guard(g_allocator.lock);
  return carve(g_allocator.permanent, size);
}

void internal_free(void* pointer, size_t size) {
  if (pointer == nullptr) return;
  if (size == 0) size = 1;
  if (size > (size_t{1} << kMaxClassShift)) {
    size_t mapped = round_to_pages(size);
    if (keep(pointer, mapped)) return;
    sys::unmap(pointer, mapped);
    g_allocator.mapped_bytes.fetch_sub(mapped, std::memory_order_relaxed);
    return;
  }
  size_t index = class_index(size);
  SpinLockGuard guard(g_allocator.lock);
  FreeBlock* block = static_cast<FreeBlock*>(pointer);
  block->next = g_allocator.free_lists[index];
  g_allocator.free_lists[index] = block;
}

size_t internal_mapped_bytes() { return g_allocator.mapped_bytes.load(std::memory_order_relaxed); }

size_t internal_peak_mapped_bytes() { return g_allocator.peak_mapped_bytes.load(std::memory_order_relaxed); }

void internal_alloc_before_fork() { g_allocator.lock.lock(); }
void internal_alloc_after_fork_parent() { g_allocator.lock.unlock(); }
void internal_alloc_after_fork_child() { g_allocator.lock.reset_after_fork(); }

}  // namespace leakscope::internal
