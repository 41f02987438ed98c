#include "core/alloc_table.h"

#include <atomic>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

// A block in 16 bytes:
//   word0 = pointer / 16 (43 bits) | birth epoch, low 21 bits
//   word1 = size (32 bits) | triple id (26 bits) | birth epoch, high 6 bits
// No block lives at address 0, so word0 == 0 marks an empty slot.
struct PackedRecord {
  uint64_t word0;
  uint64_t word1;
};
static_assert(sizeof(PackedRecord) == 16, "a live block costs 16 bytes of slot");

constexpr int kAddressBits = 43;
constexpr int kBirthLowBits = 64 - kAddressBits;
constexpr int kSizeBits = 32;
constexpr int kTripleBits = 26;
constexpr int kBirthHighBits = 64 - kSizeBits - kTripleBits;
constexpr uint64_t kAddressMask = (uint64_t{1} << kAddressBits) - 1;

inline bool packable_pointer(uintptr_t pointer) {
  return pointer != 0 && pointer % 16 == 0 && pointer >> (kAddressBits + 4) == 0;
}

inline bool packable(const AllocRecord& record) {
  return packable_pointer(record.pointer) && record.size >> kSizeBits == 0 && raw(record.triple) >> kTripleBits == 0 &&
         raw(record.birth) >> (kBirthLowBits + kBirthHighBits) == 0;
}

inline void store(PackedRecord* slot, const AllocRecord& record) {
  uint64_t birth = raw(record.birth);
  slot->word0 = record.pointer >> 4 | birth << kAddressBits;
  slot->word1 = record.size | static_cast<uint64_t>(raw(record.triple)) << kSizeBits |
                (birth >> kBirthLowBits) << (kSizeBits + kTripleBits);
}

inline AllocRecord unpack(const PackedRecord& slot) {
  uint64_t birth = slot.word0 >> kAddressBits | (slot.word1 >> (kSizeBits + kTripleBits)) << kBirthLowBits;
  return {(slot.word0 & kAddressMask) << 4, slot.word1 & ((uint64_t{1} << kSizeBits) - 1),
          static_cast<TripleId>((slot.word1 >> kSizeBits) & ((uint64_t{1} << kTripleBits) - 1)),
          static_cast<Epoch>(birth)};
}

inline uintptr_t pointer_of(const PackedRecord& slot) { return (slot.word0 & kAddressMask) << 4; }

// The side table keeps blocks whose figures do not pack as they are.
inline void store(AllocRecord* slot, const AllocRecord& record) { *slot = record; }
inline AllocRecord unpack(const AllocRecord& slot) { return slot; }
inline uintptr_t pointer_of(const AllocRecord& slot) { return slot.pointer; }

inline uint64_t pointer_hash(uintptr_t pointer) {
  // Blocks are at least 16-byte aligned; the multiply spreads the remaining bits upwards.
  return (static_cast<uint64_t>(pointer) >> 4) * 0x9e3779b97f4a7c15ull;
}

// What insert() did with a record.
enum class Inserted { kNew, kReplacing, kNoMemory };

// One shard: linear probing over a power-of-two number of slots, backward-shift deletion, all
// under the shard's lock. (Capacities between powers of two would keep the table fuller, but
// mapping a hash onto them put a multiply before every probe, which cost more time than the
// memory was worth.)
template <typename Slot>
struct alignas(64) Shard {
  SpinLock lock;
  uint32_t capacity = 0;
  uint32_t count = 0;
  Slot* slots = nullptr;

  // The shard was picked with the hash's top bits; the home slot uses bits below them.
  uint32_t home_of(uint64_t hash) const {
    return static_cast<uint32_t>(hash >> 16) & (capacity - 1);
  }
  uint32_t after(uint32_t slot) const { return (slot + 1) & (capacity - 1); }

  // find() returns the slot holding `pointer`, or the empty slot that ends its probe run.
  uint32_t find(uintptr_t pointer, uint64_t hash) const {
    uint32_t slot = home_of(hash);
    while (pointer_of(slots[slot]) != pointer && pointer_of(slots[slot]) != 0) slot = after(slot);
    return slot;
  }

  bool grow() {
    constexpr uint32_t kInitialCapacity = 64;
    uint32_t grown_capacity = capacity == 0 ? kInitialCapacity : capacity * 2;
    auto* grown = static_cast<Slot*>(internal_alloc(size_t{grown_capacity} * sizeof(Slot)));
    if (grown == nullptr) return false;
    Slot* old_slots = slots;
    uint32_t old_capacity = capacity;
    slots = grown;
    capacity = grown_capacity;
    for (uint32_t i = 0; i < old_capacity; ++i) {
      uintptr_t pointer = pointer_of(old_slots[i]);
      if (pointer != 0) slots[find(pointer, pointer_hash(pointer))] = old_slots[i];
    }
    if (old_slots != nullptr) internal_free(old_slots, size_t{old_capacity} * sizeof(Slot));
    return true;
  }

  // insert() places `record`; when its address was taken, the old record goes to *replaced. With
  // memory exhausted the block goes untracked.
  Inserted insert(const AllocRecord& record, uint64_t hash, AllocRecord* replaced) {
    if ((count + 1) * uint64_t{8} > capacity * uint64_t{7} && !grow()) return Inserted::kNoMemory;
    uint32_t slot = find(record.pointer, hash);
    bool was_taken = pointer_of(slots[slot]) != 0;
    if (was_taken) *replaced = unpack(slots[slot]);
    store(&slots[slot], record);
    if (was_taken) return Inserted::kReplacing;
    ++count;
    return Inserted::kNew;
  }

  bool remove(uintptr_t pointer, uint64_t hash, AllocRecord* removed) {
    if (count == 0) return false;
    uint32_t hole = find(pointer, hash);
    if (pointer_of(slots[hole]) == 0) return false;
    *removed = unpack(slots[hole]);
    // Close the gap: move back each later member of the run whose home does not lie cyclically
    // in (hole, next].
    for (uint32_t next = after(hole); pointer_of(slots[next]) != 0; next = after(next)) {
      uint32_t home = home_of(pointer_hash(pointer_of(slots[next])));
      bool home_after_hole = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
      if (!home_after_hole) {
        slots[hole] = slots[next];
        hole = next;
      }
    }
    slots[hole] = Slot{};
    --count;
    return true;
  }
};

// Shards of one slot kind, picked by the hash's top bits.
template <typename Slot, int kShardBits>
class ShardSet {
 public:
  static constexpr uint32_t kShards = 1u << kShardBits;

  Shard<Slot>& shard_of(uint64_t hash) { return shards_[hash >> (64 - kShardBits)]; }

  Inserted insert(const AllocRecord& record, AllocRecord* replaced) {
    uint64_t hash = pointer_hash(record.pointer);
    Shard<Slot>& shard = shard_of(hash);
    SpinLockGuard guard(shard.lock);
    return shard.insert(record, hash, replaced);
  }

  bool remove(uintptr_t pointer, AllocRecord* removed) {
    uint64_t hash = pointer_hash(pointer);
    Shard<Slot>& shard = shard_of(hash);
    SpinLockGuard guard(shard.lock);
    return shard.remove(pointer, hash, removed);
  }

  // visit() hands the live records over in batches, unpacked. Small batches: a fatal-signal
  // snapshot may run on a small alternate signal stack.
  // With `locked`, the caller holds every shard's lock already (lock_all()).
  void visit(void (*visit)(const AllocRecord*, uint32_t, void*), void* context, bool locked = false) {
    constexpr uint32_t kBatch = 64;
    AllocRecord batch[kBatch];
    for (Shard<Slot>& shard : shards_) {
      if (!locked) shard.lock.lock();
      uint32_t filled = 0;
      for (uint32_t i = 0; i < shard.capacity; ++i) {
        if (pointer_of(shard.slots[i]) == 0) continue;
        batch[filled++] = unpack(shard.slots[i]);
        if (filled == kBatch) {
          visit(batch, filled, context);
          filled = 0;
        }
      }
      if (filled != 0) visit(batch, filled, context);
      if (!locked) shard.lock.unlock();
    }
  }

  uint64_t live() const {
    uint64_t total = 0;
    for (const Shard<Slot>& shard : shards_) total += shard.count;
    return total;
  }

  uint64_t slot_bytes() const {
    uint64_t total = 0;
    for (const Shard<Slot>& shard : shards_) total += uint64_t{shard.capacity} * sizeof(Slot);
    return total;
  }

  void lock_all() {
    for (Shard<Slot>& shard : shards_) shard.lock.lock();
  }
  void unlock_all() {
    for (Shard<Slot>& shard : shards_) shard.lock.unlock();
  }
  void reset_locks_after_fork() {
    for (Shard<Slot>& shard : shards_) shard.lock.reset_after_fork();
  }

 private:
  Shard<Slot> shards_[kShards];
};

static_assert(kAllocTableShards == 1u << 9, "the packed table has 2^9 shards");

// constinit, as every runtime global: the table is in use before this library's constructors run.
constinit ShardSet<PackedRecord, 9> g_packed;
constinit ShardSet<AllocRecord, 4> g_wide;
// Blocks in g_wide. An increment is made before the block's pointer reaches the program, so any
// free of it, ordered after by the program, sees a non-zero count.
constinit std::atomic<uint64_t> g_wide_live{0};

bool wide_in_use() { return g_wide_live.load(std::memory_order_relaxed) != 0; }

bool insert_wide(const AllocRecord& record, AllocRecord* replaced) {
  Inserted inserted = g_wide.insert(record, replaced);
  if (inserted == Inserted::kNew) g_wide_live.fetch_add(1, std::memory_order_relaxed);
  return inserted == Inserted::kReplacing;
}

bool remove_wide(uintptr_t pointer, AllocRecord* removed) {
  if (!wide_in_use() || !g_wide.remove(pointer, removed)) return false;
  g_wide_live.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

// A block's address lives in one table at a time: inserting into one first takes any stale record
// at that address out of the other.
bool alloc_table_insert(const AllocRecord& record, AllocRecord* replaced) {
  if (record.pointer == 0) return false;  // 0 marks an empty slot; nothing lives there
  if (packable(record)) {
    if (remove_wide(record.pointer, replaced)) {
      g_packed.insert(record, replaced);
      return true;
    }
    return g_packed.insert(record, replaced) == Inserted::kReplacing;
  }
  if (packable_pointer(record.pointer) && g_packed.remove(record.pointer, replaced)) {
    insert_wide(record, replaced);
    return true;
  }
  return insert_wide(record, replaced);
}

bool alloc_table_remove(uintptr_t pointer, AllocRecord* removed) {
  if (pointer == 0) return false;
  if (packable_pointer(pointer) && g_packed.remove(pointer, removed)) return true;
  return remove_wide(pointer, removed);
}

void alloc_table_visit(void (*visit)(const AllocRecord*, uint32_t, void*), void* context) {
  g_packed.visit(visit, context);
  g_wide.visit(visit, context);
}

uint64_t alloc_table_live_blocks() { return g_packed.live() + g_wide.live(); }

uint64_t alloc_table_slot_bytes() { return g_packed.slot_bytes() + g_wide.slot_bytes(); }

void alloc_table_lock_all() {
  g_packed.lock_all();
  g_wide.lock_all();
}

void alloc_table_unlock_all() {
  g_wide.unlock_all();
  g_packed.unlock_all();
}

void alloc_table_visit_locked(void (*visit)(const AllocRecord*, uint32_t, void*), void* context) {
  g_packed.visit(visit, context, true);
  g_wide.visit(visit, context, true);
}

void alloc_table_before_fork() { alloc_table_lock_all(); }
void alloc_table_after_fork_parent() { alloc_table_unlock_all(); }
void alloc_table_after_fork_child() {
  g_wide.reset_locks_after_fork();
  g_packed.reset_locks_after_fork();
}

}  // namespace leakscope::internal
