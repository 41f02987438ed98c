#include "core/alloc_table.h"

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

constexpr uint32_t kInitialShardCapacity = 64;

struct alignas(64) Shard {
  SpinLock lock;
  uint32_t capacity = 0;  // power of two, or 0 before first use
  uint32_t count = 0;
  AllocRecord* slots = nullptr;
};

// constinit, as every runtime global: the table is in use before this library's constructors run.
constinit Shard g_shards[kAllocTableShards];

inline uint64_t pointer_hash(uintptr_t pointer) {
  // Blocks are at least 16-byte aligned; the multiply spreads the remaining bits upwards.
  return (static_cast<uint64_t>(pointer) >> 4) * 0x9e3779b97f4a7c15ull;
}

inline Shard& shard_of(uint64_t hash) { return g_shards[hash >> (64 - 9)]; }
static_assert(kAllocTableShards == 1u << 9, "shard_of() takes the top 9 bits");

inline uint32_t home_slot(uint64_t hash, uint32_t capacity) {
  return static_cast<uint32_t>(hash >> 16) & (capacity - 1);
}

void place(AllocRecord* slots, uint32_t capacity, const AllocRecord& record) {
  uint32_t slot = home_slot(pointer_hash(record.pointer), capacity);
  while (slots[slot].pointer != 0) slot = (slot + 1) & (capacity - 1);
  slots[slot] = record;
}

bool grow(Shard& shard) {
  uint32_t capacity = shard.capacity == 0 ? kInitialShardCapacity : shard.capacity * 2;
  auto* slots = static_cast<AllocRecord*>(internal_alloc(capacity * sizeof(AllocRecord)));
  if (slots == nullptr) return false;
  for (uint32_t i = 0; i < shard.capacity; ++i) {
    if (shard.slots[i].pointer != 0) place(slots, capacity, shard.slots[i]);
  }
  if (shard.slots != nullptr) internal_free(shard.slots, shard.capacity * sizeof(AllocRecord));
  shard.slots = slots;
  shard.capacity = capacity;
  return true;
}

// find_slot() returns the slot holding `pointer`, or capacity when absent.
uint32_t find_slot(const Shard& shard, uintptr_t pointer, uint64_t hash) {
  if (shard.capacity == 0) return 0;
  uint32_t mask = shard.capacity - 1;
  for (uint32_t slot = home_slot(hash, shard.capacity);; slot = (slot + 1) & mask) {
    if (shard.slots[slot].pointer == pointer) return slot;
    if (shard.slots[slot].pointer == 0) return shard.capacity;
  }
}

// erase_slot() closes the gap by shifting back later members of the probe run.
void erase_slot(Shard& shard, uint32_t hole) {
  uint32_t mask = shard.capacity - 1;
  for (uint32_t next = (hole + 1) & mask; shard.slots[next].pointer != 0; next = (next + 1) & mask) {
    uint32_t home = home_slot(pointer_hash(shard.slots[next].pointer), shard.capacity);
    // Move `next` into the hole unless its home lies cyclically in (hole, next].
    bool home_after_hole = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
    if (!home_after_hole) {
      shard.slots[hole] = shard.slots[next];
      hole = next;
    }
  }
  shard.slots[hole].pointer = 0;
  --shard.count;
}

}  // namespace

bool alloc_table_insert(const AllocRecord& record, AllocRecord* replaced) {
  uint64_t hash = pointer_hash(record.pointer);
  Shard& shard = shard_of(hash);
  SpinLockGuard guard(shard.lock);
  uint32_t slot = find_slot(shard, record.pointer, hash);
  if (shard.capacity != 0 && slot != shard.capacity) {
    *replaced = shard.slots[slot];
    shard.slots[slot] = record;
    return true;
  }
  if ((shard.count + 1) * 4 > shard.capacity * 3 && !grow(shard)) return false;
  place(shard.slots, shard.capacity, record);
  ++shard.count;
  return false;
}

bool alloc_table_remove(uintptr_t pointer, AllocRecord* removed) {
  uint64_t hash = pointer_hash(pointer);
  Shard& shard = shard_of(hash);
  SpinLockGuard guard(shard.lock);
  uint32_t slot = find_slot(shard, pointer, hash);
  if (shard.capacity == 0 || slot == shard.capacity) return false;
  *removed = shard.slots[slot];
  erase_slot(shard, slot);
  return true;
}

void alloc_table_visit(void (*visit)(const AllocRecord*, uint32_t, void*), void* context) {
  for (Shard& shard : g_shards) {
    SpinLockGuard guard(shard.lock);
    if (shard.capacity != 0) visit(shard.slots, shard.capacity, context);
  }
}

uint64_t alloc_table_live_blocks() {
  uint64_t total = 0;
  for (const Shard& shard : g_shards) total += shard.count;
  return total;
}

void alloc_table_before_fork() {
  for (Shard& shard : g_shards) shard.lock.lock();
}
void alloc_table_after_fork_parent() {
  for (Shard& shard : g_shards) shard.lock.unlock();
}
void alloc_table_after_fork_child() {
  for (Shard& shard : g_shards) shard.lock.reset_after_fork();
}

}  // namespace leakscope::internal
