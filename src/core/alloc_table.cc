#include "core/alloc_table.h"

#include <string.h>

#include <atomic>

#include "core/internal_alloc.h"
#include "core/probed_slots.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

// A block at a 16-byte aligned address lives in its granule: the 1 KiB of address space it starts
// in, where at most 64 blocks can start. A granule keeps a bitmap of the positions that hold a
// block and the blocks' records in address order, so a block's record is found by counting the
// bits below its own. Blocks allocated one after another mostly share a granule, and so share the
// cache lines of their records: a hash over single addresses put every record on a line of its
// own, and every insert and remove of a block that had left the cache paid a memory load.
constexpr int kGranuleShift = 10;
constexpr int kPositionShift = 4;
constexpr uint32_t kPositions = 1u << (kGranuleShift - kPositionShift);
static_assert(kPositions == 64, "a granule's positions fit one 64-bit bitmap");

struct GranuleRecord {
  uint64_t size;
  uint32_t triple;
  uint32_t birth;
};
static_assert(sizeof(GranuleRecord) == 16, "a live block costs 16 bytes of record");

// One granule holding at least one block: its key (address >> kGranuleShift) with the log2 of its
// records' room above it, the bitmap of its blocks, and its records. A granule of large or
// scattered blocks holds a few, kept in the entry itself (room log2 0): no second cache line to
// load and no memory to take for them. No block starts in the first KiB of address space, so an
// entry of all zeroes is empty.
constexpr uint32_t kRecordsInEntry = 3;

struct Granule {
  uint64_t tag;
  uint64_t present;  // bit i: a block starts at (key << kGranuleShift) + (i << kPositionShift)
  union {
    GranuleRecord few[kRecordsInEntry];  // room log2 0
    GranuleRecord* many;  // room log2 >= kFirstRoomLog2: one per bit of `present`, in address order
  };
};
// Entries of a shard past 2 KiB are mapped whole, page-aligned: each then lies on one cache line.
static_assert(sizeof(Granule) == 64, "a granule's entry is one cache line");

constexpr int kRoomShift = 56;
constexpr uint64_t kKeyMask = (uint64_t{1} << kRoomShift) - 1;
constexpr uint32_t kFirstRoomLog2 = 2;  // past the entry's own room

// count_bits() counts the set bits of a granule's `present` mask. __builtin_popcountll is a call
// into libgcc's table-driven routine on the baseline x86-64 this library is built for (no POPCNT
// instruction assumed); these few instructions inline are cheaper on every insert and remove.
inline uint32_t count_bits(uint64_t bits) {
  bits -= (bits >> 1) & 0x5555555555555555ull;
  bits = (bits & 0x3333333333333333ull) + ((bits >> 2) & 0x3333333333333333ull);
  bits = (bits + (bits >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<uint32_t>((bits * 0x0101010101010101ull) >> 56);
}

inline uint64_t key_of(const Granule& granule) { return granule.tag & kKeyMask; }
inline uint32_t room_log2(const Granule& granule) { return static_cast<uint32_t>(granule.tag >> kRoomShift); }
inline uint32_t room_of(const Granule& granule) {
  return room_log2(granule) == 0 ? kRecordsInEntry : 1u << room_log2(granule);
}
inline GranuleRecord* records_of(Granule& granule) { return room_log2(granule) == 0 ? granule.few : granule.many; }
inline const GranuleRecord* records_of(const Granule& granule) {
  return room_log2(granule) == 0 ? granule.few : granule.many;
}

inline bool in_granules(uintptr_t pointer) { return pointer >> kGranuleShift != 0 && pointer % 16 == 0; }

inline GranuleRecord pack(const AllocRecord& record) {
  return {record.size, raw(record.triple), raw(record.birth)};
}

inline AllocRecord unpack(uint64_t key, uint32_t position, const GranuleRecord& record) {
  return {static_cast<uintptr_t>(key << kGranuleShift | uint64_t{position} << kPositionShift), record.size,
          static_cast<TripleId>(record.triple), static_cast<Epoch>(record.birth)};
}

inline uint64_t spread(uint64_t key) { return key * 0x9e3779b97f4a7c15ull; }

inline uint64_t pointer_hash(uintptr_t pointer) {
  // Blocks are at least 8-byte aligned; the multiply spreads the remaining bits upwards.
  return spread(static_cast<uint64_t>(pointer) >> 3);
}

// What insert() did with a record.
enum class Inserted { kNew, kReplacing, kNoMemory };


// The wide table keeps the blocks at other addresses (8-byte aligned ones, from allocators that
// hand those out) as plain records, a slot each, under its shard's lock.
struct WideKeys {
  static uint64_t key(const AllocRecord& slot) { return slot.pointer; }
  static uint64_t hash(uint64_t pointer) { return pointer_hash(pointer); }
};

struct alignas(64) WideShard {
  SpinLock lock;
  ProbedSlots<AllocRecord, WideKeys, 64> table;

  // insert() places `record`; when its address was taken, the old record goes to *replaced. With
  // memory exhausted the block goes untracked.
  Inserted insert(const AllocRecord& record, uint64_t hash, AllocRecord* replaced) {
    if (!table.make_room()) return Inserted::kNoMemory;
    AllocRecord& slot = table.slots[table.find(record.pointer, hash)];
    bool was_taken = slot.pointer != 0;
    if (was_taken) *replaced = slot;
    slot = record;
    if (was_taken) return Inserted::kReplacing;
    ++table.count;
    return Inserted::kNew;
  }

  bool remove(uintptr_t pointer, uint64_t hash, AllocRecord* removed) {
    if (table.count == 0) return false;
    uint32_t slot = table.find(pointer, hash);
    if (table.slots[slot].pointer == 0) return false;
    *removed = table.slots[slot];
    table.erase(slot);
    return true;
  }

  bool reassign(uintptr_t pointer, uint64_t hash, TripleId triple, Epoch birth, AllocRecord* before, TripleId only_from) {
    if (table.count == 0) return false;
    AllocRecord& slot = table.slots[table.find(pointer, hash)];
    if (slot.pointer == 0) return false;
    *before = slot;
    if (only_from != TripleId::kNone && slot.triple != only_from) return false;
    if (slot.triple != triple) {
      slot.triple = triple;
      slot.birth = birth;
    }
    return true;
  }

  template <typename Emit>
  void each(Emit&& emit) const {
    for (uint32_t i = 0; i < table.capacity; ++i) {
      if (table.slots[i].pointer != 0) emit(table.slots[i]);
    }
  }

  uint64_t blocks() const { return table.count; }
  uint64_t bytes() const { return table.bytes(); }
};

// The granule table's shard: the granules whose key hashes to it, and their records, under the
// shard's lock.
struct GranuleKeys {
  static uint64_t key(const Granule& granule) { return key_of(granule); }
  static uint64_t hash(uint64_t key) { return spread(key); }
};

struct alignas(64) GranuleShard {
  SpinLock lock;
  ProbedSlots<Granule, GranuleKeys, 16> table;
  uint64_t block_count = 0;
  uint64_t record_bytes = 0;  // the records' room outside the entries, all granules

  // set_room() moves `granule`'s records into room for 2^log2 of them (log2 0: the entry itself,
  // which holds kRecordsInEntry); false without memory.
  bool set_room(Granule& granule, uint32_t log2) {
    uint32_t held = count_bits(granule.present);
    GranuleRecord* old_records = room_log2(granule) == 0 ? nullptr : granule.many;
    uint32_t old_room = room_of(granule);
    if (log2 == 0) {
      memcpy(granule.few, old_records, size_t{held} * sizeof(GranuleRecord));
    } else {
      auto* moved = static_cast<GranuleRecord*>(internal_alloc(sizeof(GranuleRecord) << log2));
      if (moved == nullptr) return false;
      memcpy(moved, records_of(granule), size_t{held} * sizeof(GranuleRecord));
      granule.many = moved;
      record_bytes += sizeof(GranuleRecord) << log2;
    }
    if (old_records != nullptr) {
      internal_free(old_records, size_t{old_room} * sizeof(GranuleRecord));
      record_bytes -= size_t{old_room} * sizeof(GranuleRecord);
    }
    granule.tag = key_of(granule) | uint64_t{log2} << kRoomShift;
    return true;
  }

  Inserted insert(const AllocRecord& record, uint64_t key, uint64_t hash, AllocRecord* replaced) {
    if (!table.make_room()) return Inserted::kNoMemory;
    Granule& granule = table.slots[table.find(key, hash)];
    if (granule.tag == 0) {
      granule.tag = key;
      ++table.count;
    }
    uint32_t position = static_cast<uint32_t>(record.pointer >> kPositionShift) & (kPositions - 1);
    uint64_t bit = uint64_t{1} << position;
    uint32_t rank = count_bits(granule.present & (bit - 1));
    if (granule.present & bit) {
      *replaced = unpack(key, position, records_of(granule)[rank]);
      records_of(granule)[rank] = pack(record);
      return Inserted::kReplacing;
    }
    uint32_t held = count_bits(granule.present);
    // A new granule's first block goes into its entry: only a granule that holds some can run short.
    if (held == room_of(granule) &&
        !set_room(granule, room_log2(granule) == 0 ? kFirstRoomLog2 : room_log2(granule) + 1)) {
      return Inserted::kNoMemory;
    }
    GranuleRecord* records = records_of(granule);
    memmove(records + rank + 1, records + rank, size_t{held - rank} * sizeof(GranuleRecord));
    records[rank] = pack(record);
    granule.present |= bit;
    ++block_count;
    return Inserted::kNew;
  }

  bool remove(uintptr_t pointer, uint64_t key, uint64_t hash, AllocRecord* removed) {
    if (table.count == 0) return false;
    uint32_t slot = table.find(key, hash);
    Granule& granule = table.slots[slot];
    uint32_t position = static_cast<uint32_t>(pointer >> kPositionShift) & (kPositions - 1);
    uint64_t bit = uint64_t{1} << position;
    if (granule.tag == 0 || (granule.present & bit) == 0) return false;
    uint32_t rank = count_bits(granule.present & (bit - 1));
    uint32_t held = count_bits(granule.present);
    GranuleRecord* records = records_of(granule);
    *removed = unpack(key, position, records[rank]);
    memmove(records + rank, records + rank + 1, size_t{held - rank - 1} * sizeof(GranuleRecord));
    granule.present &= ~bit;
    --block_count;
    if (granule.present == 0) {
      if (room_log2(granule) != 0) set_room(granule, 0);  // to the entry: takes no memory
      table.erase(slot);
    } else if (room_log2(granule) != 0 && held - 1 <= room_of(granule) / 4) {
      // Without memory the room stays as it is.
      set_room(granule, held - 1 <= kRecordsInEntry ? 0 : room_log2(granule) - 1);
    }
    return true;
  }

  bool reassign(uintptr_t pointer, uint64_t key, uint64_t hash, TripleId triple, Epoch birth, AllocRecord* before,
                TripleId only_from) {
    if (table.count == 0) return false;
    Granule& granule = table.slots[table.find(key, hash)];
    uint32_t position = static_cast<uint32_t>(pointer >> kPositionShift) & (kPositions - 1);
    uint64_t bit = uint64_t{1} << position;
    if (granule.tag == 0 || (granule.present & bit) == 0) return false;
    GranuleRecord& record = records_of(granule)[count_bits(granule.present & (bit - 1))];
    *before = unpack(key, position, record);
    if (only_from != TripleId::kNone && before->triple != only_from) return false;
    if (record.triple != raw(triple)) {
      record.triple = raw(triple);
      record.birth = raw(birth);
    }
    return true;
  }

  template <typename Emit>
  void each(Emit&& emit) const {
    // The entries are read in order, which the processor sees coming; the records of a granule
    // holding many lie elsewhere, and are loaded a few entries ahead.
    constexpr uint32_t kAhead = 16;
    constexpr uint32_t kRecordsPerLine = 64 / sizeof(GranuleRecord);
    for (uint32_t i = 0; i < table.capacity; ++i) {
      if (i + kAhead < table.capacity && room_log2(table.slots[i + kAhead]) != 0) {
        const Granule& ahead = table.slots[i + kAhead];
        uint32_t held = count_bits(ahead.present);
        for (uint32_t record = 0; record < held; record += kRecordsPerLine) __builtin_prefetch(ahead.many + record);
      }
      const Granule& granule = table.slots[i];
      const GranuleRecord* records = records_of(granule);
      uint32_t rank = 0;
      for (uint64_t bits = granule.present; bits != 0; bits &= bits - 1) {
        emit(unpack(key_of(granule), static_cast<uint32_t>(__builtin_ctzll(bits)), records[rank++]));
      }
    }
  }

  uint64_t blocks() const { return block_count; }
  uint64_t bytes() const { return table.bytes() + record_bytes; }
};

// Shards picked by the hash's top bits.
template <typename Shard, int kShardBits>
class ShardSet {
 public:
  static constexpr uint32_t kShards = 1u << kShardBits;

  Shard& shard_of(uint64_t hash) { return shards_[hash >> (64 - kShardBits)]; }

  // visit() hands the live records over in batches. Small batches: a fatal-signal snapshot may
  // run on a small alternate signal stack. With `locked`, the caller holds every shard's lock
  // already (lock_all()); else `between` (if given) is called after each shard, no lock held.
  void visit(void (*visit)(const AllocRecord*, uint32_t, void*), void* context, bool locked = false,
             void (*between)() = nullptr) {
    constexpr uint32_t kBatch = 64;
    AllocRecord batch[kBatch];
    for (Shard& shard : shards_) {
      if (!locked) shard.lock.lock();
      uint32_t filled = 0;
      shard.each([&](const AllocRecord& record) {
        batch[filled++] = record;
        if (filled == kBatch) {
          visit(batch, filled, context);
          filled = 0;
        }
      });
      if (filled != 0) visit(batch, filled, context);
      if (!locked) shard.lock.unlock();
      if (between != nullptr) between();
    }
  }

  uint64_t live() const {
    uint64_t total = 0;
    for (const Shard& shard : shards_) total += shard.blocks();
    return total;
  }

  uint64_t bytes() const {
    uint64_t total = 0;
    for (const Shard& shard : shards_) total += shard.bytes();
    return total;
  }

  void lock_all() {
    for (Shard& shard : shards_) shard.lock.lock();
  }
  void unlock_all() {
    for (Shard& shard : shards_) shard.lock.unlock();
  }
  void reset_locks_after_fork() {
    for (Shard& shard : shards_) shard.lock.reset_after_fork();
  }

 private:
  Shard shards_[kShards];
};

static_assert(kAllocTableShards == 1u << 9, "the granule table has 2^9 shards");

// constinit, as every runtime global: the table is in use before this library's constructors run.
constinit ShardSet<GranuleShard, 9> g_granules;
constinit ShardSet<WideShard, 4> g_wide;
// Blocks in g_wide. An increment is made before the block's pointer reaches the program, so any
// free of it, ordered after by the program, sees a non-zero count.
constinit std::atomic<uint64_t> g_wide_live{0};

Inserted insert_granule(const AllocRecord& record, AllocRecord* replaced) {
  uint64_t key = record.pointer >> kGranuleShift;
  uint64_t hash = spread(key);
  GranuleShard& shard = g_granules.shard_of(hash);
  shard.table.prefetch(hash);
  SpinLockGuard guard(shard.lock);
  return shard.insert(record, key, hash, replaced);
}

bool remove_granule(uintptr_t pointer, AllocRecord* removed) {
  uint64_t key = pointer >> kGranuleShift;
  uint64_t hash = spread(key);
  GranuleShard& shard = g_granules.shard_of(hash);
  shard.table.prefetch(hash);
  SpinLockGuard guard(shard.lock);
  return shard.remove(pointer, key, hash, removed);
}

bool insert_wide(const AllocRecord& record, AllocRecord* replaced) {
  uint64_t hash = pointer_hash(record.pointer);
  WideShard& shard = g_wide.shard_of(hash);
  Inserted inserted;
  {
    SpinLockGuard guard(shard.lock);
    inserted = shard.insert(record, hash, replaced);
  }
  if (inserted == Inserted::kNew) g_wide_live.fetch_add(1, std::memory_order_relaxed);
  return inserted == Inserted::kReplacing;
}

bool remove_wide(uintptr_t pointer, AllocRecord* removed) {
  if (g_wide_live.load(std::memory_order_relaxed) == 0) return false;
  uint64_t hash = pointer_hash(pointer);
  WideShard& shard = g_wide.shard_of(hash);
  {
    SpinLockGuard guard(shard.lock);
    if (!shard.remove(pointer, hash, removed)) return false;
  }
  g_wide_live.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool alloc_table_insert(const AllocRecord& record, AllocRecord* replaced) {
  if (record.pointer == 0) return false;  // 0 marks an empty slot; nothing lives there
  if (in_granules(record.pointer)) return insert_granule(record, replaced) == Inserted::kReplacing;
  return insert_wide(record, replaced);
}

void alloc_table_prefetch(uintptr_t pointer) {
  if (!in_granules(pointer)) return;
  uint64_t hash = spread(pointer >> kGranuleShift);
  g_granules.shard_of(hash).table.prefetch(hash);
}

bool alloc_table_remove(uintptr_t pointer, AllocRecord* removed) {
  if (pointer == 0) return false;
  if (in_granules(pointer)) return remove_granule(pointer, removed);
  return remove_wide(pointer, removed);
}

bool alloc_table_reassign(uintptr_t pointer, TripleId triple, Epoch birth, AllocRecord* before, TripleId only_from) {
  if (pointer == 0) return false;
  if (in_granules(pointer)) {
    uint64_t key = pointer >> kGranuleShift;
    uint64_t hash = spread(key);
    GranuleShard& shard = g_granules.shard_of(hash);
    SpinLockGuard guard(shard.lock);
    return shard.reassign(pointer, key, hash, triple, birth, before, only_from);
  }
  if (g_wide_live.load(std::memory_order_relaxed) == 0) return false;
  uint64_t hash = pointer_hash(pointer);
  WideShard& shard = g_wide.shard_of(hash);
  SpinLockGuard guard(shard.lock);
  return shard.reassign(pointer, hash, triple, birth, before, only_from);
}

void alloc_table_visit(void (*visit)(const AllocRecord*, uint32_t, void*), void* context, void (*between)()) {
  g_granules.visit(visit, context, false, between);
  g_wide.visit(visit, context, false, between);
}

uint64_t alloc_table_live_blocks() { return g_granules.live() + g_wide.live(); }

uint64_t alloc_table_slot_bytes() { return g_granules.bytes() + g_wide.bytes(); }

void alloc_table_lock_all() {
  g_granules.lock_all();
  g_wide.lock_all();
}

void alloc_table_unlock_all() {
  g_wide.unlock_all();
  g_granules.unlock_all();
}

void alloc_table_visit_locked(void (*visit)(const AllocRecord*, uint32_t, void*), void* context) {
  g_granules.visit(visit, context, true);
  g_wide.visit(visit, context, true);
}

void alloc_table_before_fork() { alloc_table_lock_all(); }
void alloc_table_after_fork_parent() { alloc_table_unlock_all(); }
void alloc_table_after_fork_child() {
  g_wide.reset_locks_after_fork();
  g_granules.reset_locks_after_fork();
}

}  // namespace leakscope::internal
