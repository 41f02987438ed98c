#include "core/recorder.h"

#include <string.h>

#include <atomic>

#include "core/deferred_records.h"
#include "core/epoch.h"
#include "core/high_water.h"
#include "core/interpreter.h"
#include "core/interval_map.h"
#include "core/internal_alloc.h"
#include "core/memory_budget.h"
#include "core/parked_blocks.h"
#include "core/sampler.h"
#include "core/stack_capture.h"
#include "core/stack_depot.h"
#include "core/startup_phase.h"
#include "core/startup_stack_memo.h"
#include "core/stream_format.h"
#include "core/thread_registry.h"
#include "core/triple_registry.h"

namespace leakscope::internal {
namespace {

int g_depth = 64;  // the option's default until recorder_set_depth()
int g_startup_depth = 1;  // likewise, recorder_set_startup_depth(); 0: start-up stacks whole
constinit std::atomic<uint64_t> g_reserved_bytes{0};  // PROT_NONE bytes mapped and not committed

// triple_cache_key() packs a (domain, task, stack) key for the per-thread cache; 0 = uncachable.
inline uint64_t triple_cache_key(Domain domain, TaskId task, StackId stack) {
  if (raw(task) >= (1u << 24)) return 0;
  return 1ull << 63 | static_cast<uint64_t>(domain) << 56 | static_cast<uint64_t>(raw(task)) << 32 | raw(stack);
}

StackId over_budget_stack() {
  uintptr_t marker = kOverBudgetFrame;
  return depot_intern(&marker, 1);
}

StackId free_list_stack() {
  uintptr_t marker = kFreeListFrame;
  return depot_intern(&marker, 1);
}

// budget_triple() is the triple of an allocation once only counting: the known one, else the
// thread's over-budget triple (no task), so that no new task or stack makes one.
TripleEntry* budget_triple(ThreadState* thread, Domain domain, TaskId task, StackId stack) {
  if (TripleEntry* known = triple_find(domain, thread->slot, task, stack)) return known;
  return triple_intern(domain, thread->slot, TaskId::kNone, over_budget_stack());
}

TripleEntry* triple_for(ThreadState* thread, Domain domain, StackId stack) {
  TaskId task = thread_current_task(thread);
  uint64_t key = triple_cache_key(domain, task, stack);
  TripleCacheSlot& slot = thread->triple_cache[(key ^ (key >> 29)) % kTripleCacheSlots];
  if (key != 0 && slot.key == key) return slot.triple;
  TripleEntry* triple = LS_LIKELY(memory_budget_stage() != BudgetStage::kCountingOnly)
                            ? triple_intern(domain, thread->slot, task, stack)
                            : budget_triple(thread, domain, task, stack);
  if (triple != nullptr && key != 0) {
    slot.key = key;
    slot.triple = triple;
  }
  return triple;
}

// budgeted_stack() is the stack id once the memory budget is near or reached: a known stack keeps
// its id; a new one is cut to kBudgetStackDepth frames, and once only counting, is the cut one if
// known, else the over-budget marker.
StackId budgeted_stack(const uintptr_t* frames, int depth, BudgetStage stage) {
  if (StackId known = depot_find(frames, depth); known != StackId::kNone) return known;
  int cut = depth < kBudgetStackDepth ? depth : kBudgetStackDepth;
  if (stage == BudgetStage::kCoarseStacks) return depot_intern(frames, cut);
  if (StackId known = depot_find(frames, cut); known != StackId::kNone) return known;
  return over_budget_stack();
}

// native_startup_stack() captures the stack of a thread that runs no interpreted code. A start-up
// stack before main is unwound only as deep as it is kept; one inside dlopen is unwound whole, to
// keep after its marker the program's frames that called dlopen (outward of leakscope's own hook).
int native_startup_stack(ThreadState* thread, const StackRequest& request, uintptr_t* frames) {
  if (request.startup_marker == 0) return stack_capture(thread, frames, g_depth);
  if (request.startup_marker == kBeforeMainFrame) {
    int depth = stack_capture(thread, frames, g_startup_depth);
    return startup_stack_cut(frames, depth, depth, kBeforeMainFrame, depth, depth, g_depth);
  }
  int depth = stack_capture(thread, frames, g_depth);
  int callers = depth;
  for (int i = 1; i < depth; ++i) {
    if (!stack_capture_is_own_code(frames[i])) continue;
    callers = i + 1;
    while (callers < depth && stack_capture_is_own_code(frames[callers])) ++callers;
    break;
  }
  int kept = g_startup_depth < depth ? g_startup_depth : depth;
  return startup_stack_cut(frames, depth, kept, request.startup_marker, callers > kept ? callers : kept, depth, g_depth);
}

// While every record is queued, a block this large is what a high-water snapshot must see as it
// happens (such blocks are few, and a burst of them is a peak). With few records waiting the thread
// applies them and records the block at once; with many (a start-up's thousands), it queues the
// block and knocks the writer instead of waiting on the writer's run (10 ms of `import torch`,
// 158 such blocks; a program making one after another would pay a knock each, 50 % of a loop's time).
constexpr size_t kLargeBlockBytes = 64 * 1024;
constexpr uint64_t kLargeBlockQueuedFrom = 1024;  // records waiting

// captured_stack() captures and interns the caller's stack; its frame buffer lives here, apart,
// so that a recorder call on a small signal stack never reserves it. A block of
// kStartupWholeStackBytes or more keeps its whole stack even during start-up (such blocks are
// few, and they are the weights and tables a reader wants named).
// `*by_caller` tells whether, within a start-up scope (startup_stack_memo.h), the stack is one its
// innermost frame names alone: an interpreted one (its interpreted part is read from frames the
// scope keeps suspended), or a native one before main (nothing past the marker); not a native one
// inside a load, whose unwind may stop short of the code that called dlopen on one path and not
// on another.
LS_NOINLINE StackId captured_stack(ThreadState* thread, size_t size, DriverFrames driver_frames, bool* by_caller) {
  uintptr_t frames[kMaxStackDepth];
  bool cut = g_startup_depth != 0 && size < kStartupWholeStackBytes;
  StackRequest request{g_depth, cut ? g_startup_depth : 0, cut ? startup_phase_marker() : 0};
  int depth = interpreter_capture_stack(thread, request, frames);
  *by_caller = depth >= 0 || request.startup_marker == kBeforeMainFrame;
  if (depth < 0) depth = native_startup_stack(thread, request, frames);
  if (driver_frames != nullptr && depth > 1) {
    int inside = driver_frames(frames, depth);
    if (inside > 0 && inside < depth) {
      memmove(frames, frames + inside, static_cast<size_t>(depth - inside) * sizeof(frames[0]));
      depth -= inside;
    }
  }
  BudgetStage stage = memory_budget_stage();
  if (LS_LIKELY(stage == BudgetStage::kWithin)) return depot_intern(frames, depth);
  return budgeted_stack(frames, depth, stage);
}

// startup_stack_memoized() tells whether the triple of this allocation may be memoized by its
// caller (startup_stack_memo.h), and fills its key: a start-up allocation whose stack keeps its
// innermost frame only, in a scope (startup_phase.h) whose interpreted frame is still the innermost
// (no interpreted code runs from a static initializer, nor is one memoized that does).
bool startup_stack_memoized(ThreadState* thread, Domain domain, size_t size, DriverFrames driver_frames,
                            StartupStackKey* key) {
  StartupScope scope = startup_phase_scope();
  if (scope.id == 0 || g_startup_depth != 1 || size >= kStartupWholeStackBytes || driver_frames != nullptr ||
      leakscope_tls_hook_caller == 0 || memory_budget_stage() != BudgetStage::kWithin ||
      interpreter_top_frame() != scope.interpreter_frame) {
    return false;
  }
  *key = StartupStackKey{scope.id, leakscope_tls_hook_caller, thread_current_task(thread), domain};
  return true;
}

// current_triple() captures the caller's stack and returns its triple, or nullptr. On an
// alternate signal stack too small for an unwind the stack is the one kSmallSignalStackFrame.
TripleEntry* current_triple(Domain domain, ThreadState* thread, size_t size, DriverFrames driver_frames = nullptr) {
  if (thread == nullptr) return nullptr;
  if (LS_UNLIKELY(thread->stack_marker != 0)) {
    uintptr_t marker = thread->stack_marker;
    return triple_for(thread, domain, depot_intern(&marker, 1));
  }
  if (LS_UNLIKELY(!stack_capture_has_room(thread))) {
    uintptr_t marker = kSmallSignalStackFrame;
    return triple_for(thread, domain, depot_intern(&marker, 1));
  }
  StartupStackKey key;
  bool memoized = startup_stack_memoized(thread, domain, size, driver_frames, &key);
  if (memoized) {
    if (TripleEntry* known = startup_stack_memo_find(thread, key)) return known;
  }
  bool by_caller;
  TripleEntry* triple = triple_for(thread, domain, captured_stack(thread, size, driver_frames, &by_caller));
  if (memoized && by_caller && triple != nullptr) startup_stack_memo_keep(thread, key, triple);
  return triple;
}

void count_freed(const AllocRecord& record, Epoch now) {
  TripleEntry* triple = triple_get_mutable(record.triple);
  if (triple == nullptr) return;
  SampleWeight weight = sample_weight(record.size, record.pointer);
  triple_record_free(triple, weight.bytes, weight.blocks, record.birth, now);
  high_water_add(-static_cast<int64_t>(weight.bytes));
}

// count_device_freed() counts a device block's end now (a reserved range is in no triple).
void count_device_freed(const DeviceBlock& block, void*) {
  if (block.kind == DeviceKey::kReservedRange) return;
  if (TripleEntry* triple = triple_get_mutable(block.triple)) triple_record_free(triple, block.size, 1, block.birth, epoch_current());
  if (block.domain != Domain::kCudaHost) high_water_add_device(block.device, -static_cast<int64_t>(block.size));
}

// take_record() removes a heap block's record; in sampled mode most blocks have none, and the
// filter says so without touching the table.
bool take_record(void* pointer, AllocRecord* taken) {
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  bool sampling = sampler_enabled();
  if (sampling && !sampler_filter_may_contain(address)) return false;
  if (!alloc_table_remove(address, taken)) return false;
  if (sampling) sampler_filter_remove(address);
  if (parked_blocks_enabled()) {
    const TripleEntry* triple = triple_get(taken->triple);
    if (triple != nullptr && triple->holds_parked_blocks.load(std::memory_order_relaxed)) parked_blocks_remove(address);
  }
  return true;
}

void put_record(const AllocRecord& record) {
  if (sampler_enabled()) sampler_filter_add(record.pointer);
  AllocRecord replaced;
  // A block already at this address was freed by a path we do not see; count it freed now.
  if (alloc_table_insert(record, &replaced)) {
    if (sampler_enabled()) sampler_filter_remove(replaced.pointer);
    count_freed(replaced, epoch_current());
  }
}

// record_alloc_now() puts a block made at `triple` in the table and counts it.
void record_alloc_now(TripleEntry* triple, uintptr_t pointer, size_t size, Epoch birth) {
  SampleWeight weight = sample_weight(size, pointer);
  triple_record_alloc(triple, weight.bytes, weight.blocks);
  high_water_add(static_cast<int64_t>(weight.bytes));
  put_record(AllocRecord{pointer, size, static_cast<TripleId>(triple->id), birth});
}

// park_now() moves a tracked block to the free-list triple `parked` (recorder_park()).
void park_now(uintptr_t block, TripleEntry* parked, Epoch now) {
  AllocRecord before;
  TripleId parked_id = static_cast<TripleId>(parked->id);
  if (!alloc_table_reassign(block, parked_id, now, &before)) return;
  // Parked again without being seen in use (CPython before 3.13 hands it out unseen): it stays as
  // it was parked, with the triple it had first.
  if (before.triple == parked_id) return;
  if (!parked_blocks_add(ParkedBlock{block, before.triple, parked_id})) {
    // No room to remember its own triple: it stays there, as if never parked.
    AllocRecord undone;
    alloc_table_reassign(block, before.triple, before.birth, &undone, parked_id);
    return;
  }
  count_freed(before, now);
  triple_record_alloc(parked, before.size, 1);
  high_water_add(static_cast<int64_t>(before.size));
}

// renew_now() counts a tracked block freed and made again at `triple` (recorder_renew()).
void renew_now(uintptr_t block, TripleEntry* triple, Epoch now) {
  AllocRecord old;
  if (!take_record(reinterpret_cast<void*>(block), &old)) return;
  count_freed(old, now);
  record_alloc_now(triple, block, old.size, now);
}

// The blocks queued resizes took (kTake) until their kTakeEnd: one resize at a time runs under an
// interpreter's lock, so a few places serve every interpreter of a process. The settling
// thread's alone.
struct QueuedTake {
  uintptr_t pointer;  // 0: the place is free
  bool tracked;
  AllocRecord record;
};
QueuedTake g_queued_takes[16];

void apply_take(const DeferredRecord& take) {
  AllocRecord record;
  bool tracked = take_record(reinterpret_cast<void*>(take.pointer), &record);
  for (QueuedTake& place : g_queued_takes) {
    if (place.pointer != 0) continue;
    place = QueuedTake{take.pointer, tracked, record};
    return;
  }
  // No place left (more interpreters resizing at once than places): counted as ended now; a
  // failed resize then leaves its block untracked.
  if (tracked) count_freed(record, take.epoch);
}

void apply_take_end(const DeferredRecord& end) {
  for (QueuedTake& place : g_queued_takes) {
    if (place.pointer != end.pointer) continue;
    if (place.tracked) {
      if (end.size == 0) {
        count_freed(place.record, end.epoch);
      } else {
        put_record(place.record);
      }
    }
    place.pointer = 0;
    return;
  }
}

// apply_deferred() applies queued records, in order (deferred_records.h).
void apply_deferred(const DeferredRecord* records, size_t count) {
  // The table entries of the records a few ahead load while this one is applied: the loads of a
  // batch overlap, where the hooks paid each in turn.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < count && i < kAhead; ++i) alloc_table_prefetch(records[i].pointer);
  for (size_t i = 0; i < count; ++i) {
    if (i + kAhead < count) alloc_table_prefetch(records[i + kAhead].pointer);
    const DeferredRecord& record = records[i];
    switch (record.kind) {
      case DeferredKind::kAlloc:
        if (TripleEntry* triple = triple_get_mutable(record.triple)) record_alloc_now(triple, record.pointer, record.size, record.epoch);
        break;
      case DeferredKind::kFree: {
        AllocRecord removed;
        if (take_record(reinterpret_cast<void*>(record.pointer), &removed)) count_freed(removed, record.epoch);
        break;
      }
      case DeferredKind::kPark:
        if (TripleEntry* parked = triple_get_mutable(record.triple)) park_now(record.pointer, parked, record.epoch);
        break;
      case DeferredKind::kRenew:
        if (TripleEntry* triple = triple_get_mutable(record.triple)) renew_now(record.pointer, triple, record.epoch);
        break;
      case DeferredKind::kTake:
        apply_take(record);
        break;
      case DeferredKind::kTakeEnd:
        apply_take_end(record);
        break;
    }
  }
  high_water_publish();
}

// record_made() records a block made at `triple`: queued when `append` takes its record, else at
// once, after what is queued.
LS_ALWAYS_INLINE void record_made(ThreadState* thread, TripleEntry* triple, void* pointer, size_t size,
                                  bool (*append)(const DeferredRecord&)) {
  uintptr_t block = reinterpret_cast<uintptr_t>(pointer);
  Epoch now = epoch_current();
  thread->last_alloc = block;
  bool large = size >= kLargeBlockBytes;
  if ((!large || deferred_records_pending() >= kLargeBlockQueuedFrom) &&
      append(DeferredRecord{block, size, static_cast<TripleId>(triple->id), now, DeferredKind::kAlloc})) {
    if (large) runtime_request_settle();
    return;
  }
  if (deferred_records_alone()) deferred_records_settle();
  record_alloc_now(triple, block, size, now);
}

// free_now() ends a heap block's record; queue_free() queues its end instead, false when the
// queue does not take it.
void free_now(void* pointer) {
  AllocRecord removed;
  if (!take_record(pointer, &removed)) return;
  count_freed(removed, epoch_current());
  ThreadState* thread = thread_current_if_registered();
  if (thread != nullptr && removed.pointer == thread->free_watch.block) thread->free_watch.freed = true;
}

bool queue_free(void* pointer) {
  uintptr_t block = reinterpret_cast<uintptr_t>(pointer);
  DeferredRecord end{block, 0, TripleId::kNone, epoch_current(), DeferredKind::kFree};
  if (!deferred_records_append(end)) return false;
  ThreadState* thread = thread_current_if_registered();
  if (thread != nullptr && block == thread->free_watch.block) thread->free_watch.freed = true;
  return true;
}

void count_cut(const IntervalCut& cut, void* context) {
  if (cut.removed.triple == kReservedRange) {
    g_reserved_bytes.fetch_sub(cut.removed.end - cut.removed.begin, std::memory_order_relaxed);
    return;
  }
  TripleEntry* triple = triple_get_mutable(cut.removed.triple);
  if (triple == nullptr) return;
  Epoch now = *static_cast<const Epoch*>(context);
  triple_record_free(triple, cut.removed.end - cut.removed.begin, cut.whole_block ? 1 : 0, cut.removed.birth, now);
  high_water_add(-static_cast<int64_t>(cut.removed.end - cut.removed.begin));
  if (cut.split) triple->split_count.fetch_add(1, std::memory_order_relaxed);
}

struct TakeContext {
  TakenRange* taken;
  Epoch now;
};

void keep_cut(const IntervalCut& cut, void* context) {
  auto* take = static_cast<TakeContext*>(context);
  if (take->taken->count < TakenRange::kCapacity) {
    take->taken->cuts[take->taken->count++] = cut;
  } else {
    count_cut(cut, &take->now);  // more pieces than one mremap can meet in practice
  }
}

}  // namespace

void recorder_take_range(uintptr_t begin, size_t length, TakenRange* taken) {
  runtime_poll_teardown();
  taken->count = 0;
  TakeContext context{taken, epoch_current()};
  interval_map_extract(begin, begin + length, keep_cut, &context);
}

void recorder_count_range_freed(const TakenRange& taken) {
  Epoch now = epoch_current();
  for (int i = 0; i < taken.count; ++i) count_cut(taken.cuts[i], &now);
}

void recorder_restore_range(const TakenRange& taken) {
  for (int i = 0; i < taken.count; ++i) interval_map_insert(taken.cuts[i].removed);
}

void recorder_set_depth(int depth) { g_depth = depth < 1 ? 1 : depth > kMaxStackDepth ? kMaxStackDepth : depth; }

// The marker needs a frame of the depth: at most depth - 1 frames are kept before it.
void recorder_set_startup_depth(int depth) { g_startup_depth = depth < 0 ? 0 : depth >= g_depth ? g_depth - 1 : depth; }

void recorder_alloc(Domain domain, void* pointer, size_t size) {
  ThreadState* thread = thread_current();
  if (thread == nullptr || (sampler_enabled() && !sampler_take(thread, size))) return;
  TripleEntry* triple = current_triple(domain, thread, size);
  if (triple == nullptr) return;
  record_made(thread, triple, pointer, size, deferred_records_append_alone);
}

void recorder_alloc_serialized(void* pointer, size_t size) {
  if (sampler_enabled()) return recorder_alloc(Domain::kHeap, pointer, size);
  ThreadState* thread = thread_current();
  if (thread == nullptr) return;
  TripleEntry* triple = current_triple(Domain::kHeap, thread, size);
  if (triple == nullptr) return;
  record_made(thread, triple, pointer, size, deferred_records_append);
}

void recorder_free_serialized(void* pointer) {
  runtime_poll_teardown();
  if (!queue_free(pointer)) free_now(pointer);
}

bool recorder_take_queued(void* pointer) {
  runtime_poll_teardown();
  if (deferred_records_alone()) thread_current();  // as recorder_free()
  return deferred_records_append(
      DeferredRecord{reinterpret_cast<uintptr_t>(pointer), 0, TripleId::kNone, epoch_current(), DeferredKind::kTake});
}

void recorder_end_take_queued(void* pointer, bool ended) {
  deferred_records_append(DeferredRecord{reinterpret_cast<uintptr_t>(pointer), ended ? 0u : 1u, TripleId::kNone,
                                         epoch_current(), DeferredKind::kTakeEnd});
}

bool recorder_queue_serialized() { return deferred_records_init(apply_deferred, runtime_request_settle); }

void recorder_queue_all() {
  if (!sampler_enabled()) deferred_records_queue_all(apply_deferred, runtime_request_settle);
}

bool recorder_queues_all() { return deferred_records_alone(); }

uintptr_t recorder_last_alloc() {
  ThreadState* thread = thread_current_if_registered();
  return thread != nullptr ? thread->last_alloc : 0;
}

void recorder_renew(void* pointer) {
  runtime_poll_teardown();
  // The blocks a runtime hands out again from its free lists are small: the stack is taken before
  // the record is seen, by the thread, and the record's work is queued when the block's allocator
  // is serialized.
  ThreadState* thread = thread_current();
  TripleEntry* triple = current_triple(Domain::kHeap, thread, 0);
  if (triple == nullptr) return;
  uintptr_t block = reinterpret_cast<uintptr_t>(pointer);
  Epoch now = epoch_current();
  if (!deferred_records_append(DeferredRecord{block, 0, static_cast<TripleId>(triple->id), now, DeferredKind::kRenew})) {
    renew_now(block, triple, now);
  }
  thread->last_alloc = block;
}

void recorder_free(void* pointer) {
  runtime_poll_teardown();
  if (deferred_records_alone()) {
    thread_current();  // a thread ending a block before it made one registers here: a second one ends the queuing
    if (queue_free(pointer)) return;
  }
  free_now(pointer);
}

FreeWatch recorder_watch_free(uintptr_t block) {
  ThreadState* thread = thread_current();
  if (thread == nullptr) return FreeWatch{0, false};
  FreeWatch replaced = thread->free_watch;
  thread->free_watch = FreeWatch{block, false};
  return replaced;
}

bool recorder_watched_freed() {
  ThreadState* thread = thread_current_if_registered();
  return thread != nullptr && thread->free_watch.freed;
}

void recorder_end_watch(FreeWatch replaced) {
  if (ThreadState* thread = thread_current_if_registered()) thread->free_watch = replaced;
}

void recorder_park(void* pointer) {
  runtime_poll_teardown();
  ThreadState* thread = thread_current();
  if (thread == nullptr || sampler_enabled()) return;
  TripleEntry* parked = triple_for(thread, Domain::kHeap, free_list_stack());
  if (parked == nullptr) return;
  Epoch now = epoch_current();
  uintptr_t block = reinterpret_cast<uintptr_t>(pointer);
  // Written once: every tuple the interpreter keeps comes through here.
  if (!parked->holds_parked_blocks.load(std::memory_order_relaxed)) parked->holds_parked_blocks.store(true, std::memory_order_relaxed);
  if (deferred_records_append(DeferredRecord{block, 0, static_cast<TripleId>(parked->id), now, DeferredKind::kPark})) return;
  park_now(block, parked, now);
}

void recorder_unpark_in_use() {
  if (!parked_blocks_enabled()) return;
  // The snapshot writer's alone (under the snapshot lock): made once, kept.
  constexpr size_t kBatch = 4096;
  static ParkedBlock* batch = static_cast<ParkedBlock*>(internal_alloc_permanent(kBatch * sizeof(ParkedBlock)));
  if (batch == nullptr) return;
  for (;;) {
    size_t taken = parked_blocks_take_in_use(batch, kBatch);
    Epoch now = epoch_current();
    for (size_t i = 0; i < taken; ++i) {
      const ParkedBlock& parked = batch[i];
      AllocRecord before;
      // Freed, or freed and made again, since it was taken from the set: nothing to give back.
      if (!alloc_table_reassign(parked.block, parked.own, now, &before, parked.parked)) continue;
      count_freed(before, now);
      if (TripleEntry* own = triple_get_mutable(parked.own)) triple_record_alloc(own, before.size, 1);
      high_water_add(static_cast<int64_t>(before.size));
    }
    if (taken < kBatch) break;
  }
}

bool recorder_take(void* pointer, AllocRecord* taken) {
  runtime_poll_teardown();
  return take_record(pointer, taken);
}

void recorder_count_freed(const AllocRecord& taken) { count_freed(taken, epoch_current()); }

void recorder_restore(const AllocRecord& taken) { put_record(taken); }

void recorder_device_alloc(DeviceBlock block, DriverFrames driver_frames) {
  runtime_poll_teardown();
  block.birth = epoch_current();
  block.triple = TripleId::kNone;
  if (block.kind != DeviceKey::kReservedRange) {
    TripleEntry* triple = current_triple(block.domain, thread_current(), block.size, driver_frames);
    if (triple == nullptr) return;
    triple_record_alloc(triple, block.size, 1);  // device blocks are few: always recorded, never sampled
    if (block.domain != Domain::kCudaHost) high_water_add_device(block.device, static_cast<int64_t>(block.size));  // pinned host memory is the host's
    block.triple = static_cast<TripleId>(triple->id);
  }
  DeviceBlock replaced;
  if (device_table_insert(block, &replaced)) count_device_freed(replaced, nullptr);
}

void recorder_device_free(DeviceKey kind, uint64_t key) {
  runtime_poll_teardown();
  DeviceBlock removed;
  if (device_table_remove(kind, key, &removed)) count_device_freed(removed, nullptr);
}

void recorder_device_release(uint64_t handle) {
  runtime_poll_teardown();
  DeviceBlock removed;
  if (device_table_release(handle, &removed)) count_device_freed(removed, nullptr);
}

void recorder_device_unmap(uintptr_t begin, uint64_t size) {
  runtime_poll_teardown();
  device_table_unmap(begin, size, count_device_freed, nullptr);
}

void recorder_device_free_context(uint64_t context) {
  runtime_poll_teardown();
  device_table_remove_context(context, count_device_freed, nullptr);
}

void recorder_device_forget_all() {
  device_table_remove_all(count_device_freed, nullptr);
}

void recorder_map(Domain domain, uintptr_t begin, size_t length, bool reserved) {
  recorder_unmap(begin, length);
  if (reserved) {
    if (interval_map_insert(Interval{begin, begin + length, kReservedRange, epoch_current()})) {
      g_reserved_bytes.fetch_add(length, std::memory_order_relaxed);
    }
    return;
  }
  TripleEntry* triple = current_triple(domain, thread_current(), length);
  if (triple == nullptr) return;
  triple_record_alloc(triple, length, 1);  // mappings are few: always recorded, never sampled
  high_water_add(static_cast<int64_t>(length));
  interval_map_insert(Interval{begin, begin + length, static_cast<TripleId>(triple->id), epoch_current()});
}

void recorder_protect(uintptr_t begin, size_t length, bool accessible) {
  TakenRange taken;
  taken.count = 0;
  TakeContext context{&taken, epoch_current()};
  // Only the parts that change kind are taken: reserved ones when made accessible, mapped ones
  // when made PROT_NONE; whatever else is in the range keeps its record.
  auto reserved = [](const Interval& interval) { return interval.triple == kReservedRange; };
  auto mapped = [](const Interval& interval) { return interval.triple != kReservedRange; };
  interval_map_extract(begin, begin + length, keep_cut, &context, accessible ? +reserved : +mapped);
  for (int i = 0; i < taken.count; ++i) {
    const Interval& part = taken.cuts[i].removed;
    count_cut(taken.cuts[i], &context.now);
    recorder_map(Domain::kMmap, part.begin, part.end - part.begin, !accessible);
  }
}

uint64_t recorder_reserved_bytes() { return g_reserved_bytes.load(std::memory_order_relaxed); }

void recorder_unmap(uintptr_t begin, size_t length) {
  runtime_poll_teardown();
  Epoch now = epoch_current();
  interval_map_extract(begin, begin + length, count_cut, &now);
}

}  // namespace leakscope::internal
