// File: deferred_records.h
//
// Records of blocks whose allocator already serializes its calls, applied to the allocation table
// by the writer thread instead of by the thread that allocates. CPython's object allocator
// (pymalloc) serves its blocks from arenas it maps through an allocator of its own, and is only
// called with the interpreter's lock held; so every allocation, free and reuse of a block inside an
// arena happens in one order, the order the hooks append their records here, and no other
// allocator can hand out an address inside an arena while it is mapped. The hook then pays for its
// stack and an append; the table's insert or remove (a cache miss each in a table of a million
// blocks, half the cost of tracing `import torch`) and the counting of a free run on the other core.
//
// While the program has had one thread every heap record is queued the same way
// (deferred_records_queue_all()): one thread's calls are in one order too.
//
// What is asked of the table or of the counters must first settle the queue: snapshots, leak
// checks and the C API's figures do. An arena is settled before its memory goes back, so nothing
// queued outlives the address range it refers to.
#ifndef LEAKSCOPE_CORE_DEFERRED_RECORDS_H_
#define LEAKSCOPE_CORE_DEFERRED_RECORDS_H_

#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

enum class DeferredKind : uint32_t {
  kAlloc,    // a block made: pointer, size, triple, epoch (its birth)
  kFree,     // a block ended: pointer, epoch (its end)
  kPark,     // a block put on a free list: pointer, triple (the free list's), epoch
  kRenew,    // a block handed out again unseen by the allocator: pointer, triple (its new one), epoch
  kTake,     // a block being resized: its record is held aside until kTakeEnd says how that went
  kTakeEnd,  // size 1: the resize failed and the block stays as it was; 0: it ended, at epoch
};

struct DeferredRecord {
  uintptr_t pointer;
  uint64_t size;
  TripleId triple;
  Epoch epoch;
  DeferredKind kind;
};

using ApplyDeferred = void (*)(const DeferredRecord* records, size_t count);

// deferred_records_init() maps the queue and names what applies it, and what knocks the writer
// when kDeferredKnockAt records wait; false without memory (every block is then recorded at once,
// as any other).
bool deferred_records_init(ApplyDeferred apply, void (*knock)());

// deferred_records_queue_all() has every record queued, wherever its block lies, until
// deferred_records_end_alone(): while a program has one thread, all its allocations and frees come
// in one order, which the queue keeps (a free is appended before the block goes back, an
// allocation once the block is made), so no reuse of an address can overtake its end. Start-up
// (libraries' static initializers, imports) is most of some programs' allocations and runs on one
// thread. The queue is mapped at the program's kAloneAfterAllocations-th allocation (a program
// making fewer is not worth its 2 MiB), unless it is there already.
void deferred_records_queue_all(ApplyDeferred apply, void (*knock)());

// deferred_records_alone() tells whether every record is queued (racy: append() decides).
bool deferred_records_alone();

// deferred_records_append_alone() queues an allocation's record while every record is queued,
// counting it toward the start of that; false when it does not, and the caller records it at once.
// Anything else is queued by deferred_records_append() (which takes every record then).
bool deferred_records_append_alone(const DeferredRecord& record);

// deferred_records_end_alone() is called by a thread other than the first before it records
// anything: what is queued is applied, and from then on only blocks in ranges are queued.
void deferred_records_end_alone();

// deferred_records_add_range() has blocks inside [begin, begin + length) (an arena the serialized
// allocator just mapped) recorded through the queue; false when it cannot (no memory, or a range
// that shares its address space too finely), and they are recorded at once.
bool deferred_records_add_range(uintptr_t begin, size_t length);

// deferred_records_remove_range() settles the queue and ends the range, before its memory goes back.
void deferred_records_remove_range(uintptr_t begin, size_t length);

// deferred_records_append() queues `record` when every record is queued or its pointer lies in a
// range (kTakeEnd always); false when it does not, and the caller records it at once. A full queue
// is applied by the appending thread; found full again within 100 ms while every record is queued,
// the writer does not keep up, and that ends (as deferred_records_end_alone() does).
bool deferred_records_append(const DeferredRecord& record);

// deferred_records_pending() is the number of records queued and not applied yet (racy).
uint64_t deferred_records_pending();

// deferred_records_settle() applies every record queued so far, in runs of 4 096 with the queue let
// go between them (a thread finding it full waits for one run). Not signal-safe; the writer, the
// threads whose records fill the queue, and whoever reads the table or the counters call it.
void deferred_records_settle();

// deferred_records_try_settle() is settle() for a fatal signal's handler, which may have stopped
// a thread inside it: false, settling nothing, when the queue stays taken.
bool deferred_records_try_settle();

// deferred_records_visit_pending() calls visit(record, context) for each record queued and not
// applied, in order, without applying anything: for a leak check, which stops the program's
// threads and may not take a lock then. Settle first, so that these are few.
void deferred_records_visit_pending(void (*visit)(const DeferredRecord& record, void* context), void* context);

// While records arrive fast (kDeferredSettleAt or more since it last looked) the writer settles
// them every kDeferredSettlePollNs; a thread appending knocks it only when kDeferredKnockAt wait
// (it sleeps, or writes a snapshot), as waking a thread costs the one that knocks a system call
// and an interrupt of another core. A program making fewer leaves the writer asleep until its
// next snapshot or the knock.
constexpr uint64_t kDeferredSettlePollNs = 1'000'000;
constexpr uint64_t kDeferredKnockAt = 8192;
// Also what a long table scan of the writer's lets wait before it settles between shards.
constexpr uint64_t kDeferredSettleAt = 1024;

void deferred_records_before_fork();
void deferred_records_after_fork_parent();
void deferred_records_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_DEFERRED_RECORDS_H_
