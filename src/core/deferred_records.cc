#include "core/deferred_records.h"

#include <atomic>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

// 2 MiB of records: the queue fills only when the writer gets no core for a while, and the
// appending thread then settles it itself.
constexpr uint64_t kQueueCapacity = uint64_t{1} << 16;
static_assert(kQueueCapacity >= 4 * kDeferredKnockAt, "the writer is knocked well before the queue fills");

// Ranges are found by the MiB of address space they touch. An arena of pymalloc is 1 MiB, so a
// MiB meets at most two of them; smaller ranges of older allocators fit up to four. A range that
// would make a fifth is not added (its blocks are recorded at once).
constexpr int kChunkShift = 20;
constexpr int kRangesPerChunk = 4;

struct Range {
  uintptr_t begin = 0;  // 0: unused
  uintptr_t end = 0;
};

struct Chunk {
  uint64_t key = 0;  // address >> kChunkShift; 0: empty (no range lies in the first MiB)
  Range ranges[kRangesPerChunk];
};

// ChunkTable: open addressing with linear probing and backward-shift deletion, kept at most half
// full. A few hundred chunks for a process with gigabytes of Python objects.
class ChunkTable {
 public:
  bool covers(uintptr_t pointer) const {
    if (count_ == 0) return false;
    const Chunk* chunk = find(pointer >> kChunkShift);
    if (chunk == nullptr) return false;
    for (const Range& range : chunk->ranges) {
      if (pointer >= range.begin && pointer < range.end) return true;
    }
    return false;
  }

  bool add(uintptr_t begin, uintptr_t end) {
    uint64_t first = begin >> kChunkShift, last = (end - 1) >> kChunkShift;
    for (uint64_t key = first; key <= last; ++key) {
      if (!add_to_chunk(key, Range{begin, end})) {
        for (uint64_t added = first; added < key; ++added) remove_from_chunk(added, begin);
        return false;
      }
    }
    return true;
  }

  void remove(uintptr_t begin, uintptr_t end) {
    uint64_t first = begin >> kChunkShift, last = (end - 1) >> kChunkShift;
    for (uint64_t key = first; key <= last; ++key) remove_from_chunk(key, begin);
  }

 private:
  uint32_t home_of(uint64_t key) const {
    return static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & (capacity_ - 1);
  }

  const Chunk* find(uint64_t key) const {
    for (uint32_t slot = home_of(key);; slot = (slot + 1) & (capacity_ - 1)) {
      if (chunks_[slot].key == key) return &chunks_[slot];
      if (chunks_[slot].key == 0) return nullptr;
    }
  }

  bool add_to_chunk(uint64_t key, Range range) {
    if (const Chunk* known = count_ != 0 ? find(key) : nullptr) {
      for (Range& place : const_cast<Chunk*>(known)->ranges) {
        if (place.begin == 0) {
          place = range;
          return true;
        }
      }
      return false;
    }
    if (!make_room()) return false;
    uint32_t slot = home_of(key);
    while (chunks_[slot].key != 0) slot = (slot + 1) & (capacity_ - 1);
    chunks_[slot].key = key;
    chunks_[slot].ranges[0] = range;
    ++count_;
    return true;
  }

  void remove_from_chunk(uint64_t key, uintptr_t begin) {
    Chunk* chunk = count_ != 0 ? const_cast<Chunk*>(find(key)) : nullptr;
    if (chunk == nullptr) return;
    bool empty = true;
    for (Range& range : chunk->ranges) {
      if (range.begin == begin) range = Range{};
      if (range.begin != 0) empty = false;
    }
    if (empty) erase(static_cast<uint32_t>(chunk - chunks_));
  }

  void erase(uint32_t hole) {
    for (uint32_t next = (hole + 1) & (capacity_ - 1); chunks_[next].key != 0; next = (next + 1) & (capacity_ - 1)) {
      uint32_t home = home_of(chunks_[next].key);
      bool home_after_hole = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
      if (!home_after_hole) {
        chunks_[hole] = chunks_[next];
        hole = next;
      }
    }
    chunks_[hole] = Chunk{};
    --count_;
  }

  bool make_room() {
    if ((count_ + 1) * 2 <= capacity_) return true;
    uint32_t grown_capacity = capacity_ == 0 ? 64 : capacity_ * 2;
    auto* grown = static_cast<Chunk*>(internal_alloc(size_t{grown_capacity} * sizeof(Chunk)));
    if (grown == nullptr) return false;
    Chunk* old = chunks_;
    uint32_t old_capacity = capacity_;
    chunks_ = grown;
    capacity_ = grown_capacity;
    for (uint32_t i = 0; i < old_capacity; ++i) {
      if (old[i].key == 0) continue;
      uint32_t slot = home_of(old[i].key);
      while (chunks_[slot].key != 0) slot = (slot + 1) & (capacity_ - 1);
      chunks_[slot] = old[i];
    }
    if (old != nullptr) internal_free(old, size_t{old_capacity} * sizeof(Chunk));
    return true;
  }

  Chunk* chunks_ = nullptr;
  uint32_t capacity_ = 0;
  uint32_t count_ = 0;
};

// The queue: appended to under g_append_lock, applied under g_settle_lock, which is taken after
// g_append_lock when both are (a full queue settles from inside an append).
constinit SpinLock g_append_lock;
constinit SpinLock g_settle_lock;
constinit ChunkTable g_ranges;  // under g_append_lock
DeferredRecord* g_queue = nullptr;
ApplyDeferred g_apply = nullptr;
void (*g_knock)() = nullptr;
alignas(64) constinit std::atomic<uint64_t> g_tail{0};  // next place appended to
alignas(64) constinit std::atomic<uint64_t> g_head{0};  // next record applied

// settle_held() applies what is queued, in the order it was appended; the caller holds g_settle_lock.
void settle_held() {
  uint64_t head = g_head.load(std::memory_order_relaxed);
  uint64_t tail = g_tail.load(std::memory_order_acquire);
  while (head != tail) {
    uint64_t place = head & (kQueueCapacity - 1);
    uint64_t run = tail - head < kQueueCapacity - place ? tail - head : kQueueCapacity - place;
    g_apply(&g_queue[place], run);
    head += run;
    g_head.store(head, std::memory_order_release);
  }
}

// append_held() queues `record`, settling a full queue first; the caller holds g_append_lock.
// True when the writer should be knocked.
bool append_held(const DeferredRecord& record) {
  uint64_t tail = g_tail.load(std::memory_order_relaxed);
  if (tail - g_head.load(std::memory_order_acquire) == kQueueCapacity) {
    SpinLockGuard settling(g_settle_lock);
    settle_held();
  }
  g_queue[tail & (kQueueCapacity - 1)] = record;
  g_tail.store(tail + 1, std::memory_order_release);
  return tail + 1 - g_head.load(std::memory_order_relaxed) == kDeferredKnockAt;
}

}  // namespace

bool deferred_records_init(ApplyDeferred apply, void (*knock)()) {
  if (g_queue != nullptr) return true;
  g_apply = apply;
  g_knock = knock;
  g_queue = static_cast<DeferredRecord*>(internal_alloc_permanent(kQueueCapacity * sizeof(DeferredRecord)));
  return g_queue != nullptr;
}

bool deferred_records_add_range(uintptr_t begin, size_t length) {
  if (g_queue == nullptr || length == 0 || begin >> kChunkShift == 0) return false;
  SpinLockGuard guard(g_append_lock);
  return g_ranges.add(begin, begin + length);
}

void deferred_records_remove_range(uintptr_t begin, size_t length) {
  if (g_queue == nullptr || length == 0) return;
  SpinLockGuard guard(g_append_lock);
  {
    SpinLockGuard settling(g_settle_lock);
    settle_held();
  }
  g_ranges.remove(begin, begin + length);
}

bool deferred_records_covers(uintptr_t pointer) {
  if (g_queue == nullptr) return false;
  SpinLockGuard guard(g_append_lock);
  return g_ranges.covers(pointer);
}

bool deferred_records_append(const DeferredRecord& record) {
  if (g_queue == nullptr) return false;
  bool knock;
  {
    SpinLockGuard guard(g_append_lock);
    if (record.kind != DeferredKind::kTakeEnd && !g_ranges.covers(record.pointer)) return false;
    knock = append_held(record);
  }
  if (knock) g_knock();
  return true;
}

uint64_t deferred_records_pending() {
  return g_tail.load(std::memory_order_relaxed) - g_head.load(std::memory_order_relaxed);
}

void deferred_records_settle() {
  if (g_queue == nullptr || deferred_records_pending() == 0) return;
  SpinLockGuard settling(g_settle_lock);
  settle_held();
}

bool deferred_records_try_settle() {
  if (g_queue == nullptr || deferred_records_pending() == 0) return true;
  if (!g_settle_lock.try_lock_for(100)) return false;
  settle_held();
  g_settle_lock.unlock();
  return true;
}

void deferred_records_visit_pending_ends(void (*visit)(uintptr_t pointer, void* context), void* context) {
  if (g_queue == nullptr) return;
  uint64_t tail = g_tail.load(std::memory_order_acquire);
  for (uint64_t place = g_head.load(std::memory_order_acquire); place != tail; ++place) {
    const DeferredRecord& record = g_queue[place & (kQueueCapacity - 1)];
    if (record.kind == DeferredKind::kFree || record.kind == DeferredKind::kTake) visit(record.pointer, context);
  }
}

void deferred_records_before_fork() {
  g_append_lock.lock();
  g_settle_lock.lock();
}

void deferred_records_after_fork_parent() {
  g_settle_lock.unlock();
  g_append_lock.unlock();
}

void deferred_records_after_fork_child() {
  g_settle_lock.reset_after_fork();
  g_append_lock.reset_after_fork();
}

}  // namespace leakscope::internal
