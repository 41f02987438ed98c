// File: reachability.h
//
// The marking of a leak check, as LeakSanitizer marks (docs/RUNTIME.md, "Leak check"): every
// aligned 8-byte word of the roots that points at or inside a live block marks it reachable, and
// what a reachable block holds is scanned in turn (an explicit frontier, no recursion). Then every
// block left unmarked is scanned once: the unmarked blocks it points to are *indirectly lost*; the
// rest are *directly lost*. A block's pointer to itself counts for nothing, so a block that only
// points at itself is lost, and a cycle of lost blocks with nothing pointing in is two indirect
// losses, as LeakSanitizer reports it. Pure computation over memory the caller vouches is
// readable; nothing here allocates through libc.
#ifndef LEAKSCOPE_CORE_REACHABILITY_H_
#define LEAKSCOPE_CORE_REACHABILITY_H_

#include <stddef.h>
#include <stdint.h>

namespace leakscope::internal {

enum class BlockState : uint8_t {
  kUnreached = 0,  // after classify_lost(): directly lost
  kReachable = 1,
  kIndirectlyLost = 2,
  kFreedBeforeScan = 3,  // freed by a record still queued when the program was paused: dropped before the scan
};

struct ScanBlock {
  uintptr_t begin;
  uint64_t size;
  uint32_t triple;
  BlockState state;
  bool readable;  // its bytes may be read (the caller checked the mappings)
};

// sort_scan_blocks() orders blocks by address; `scratch` holds `count` blocks, `counters`
// kRadixCounters entries (radix_sort.h).
void sort_scan_blocks(ScanBlock* blocks, ScanBlock* scratch, size_t count, size_t* counters);

class ReachabilityScan {
 public:
  // `blocks` sorted by address, not overlapping; `frontier` has room for `count` indices, and
  // `begins` for `count` addresses (the blocks' starts, packed: a lookup's binary search then
  // touches a third of the cache lines).
  ReachabilityScan(ScanBlock* blocks, size_t count, uint32_t* frontier, uintptr_t* begins);

  // scan_root() marks what the words of [begin, end) point to (and what that reaches: call
  // flood()). With `allocator_data` (the allocator's own globals: glibc's arenas live in libc's
  // data), a word pointing at the last 8 bytes of a block on a 16-byte boundary is passed over:
  // it is the arena's pointer to the chunk header that follows the block (the top chunk, a bin),
  // not the program's pointer to the block.
  void scan_root(uintptr_t begin, uintptr_t end, bool allocator_data = false);

  // mark_reachable() marks block `index` reachable, as if a root pointed at it.
  void mark_reachable(size_t index);

  // flood() scans every block marked so far, and what they mark, until nothing new is reached.
  void flood();

  // classify_lost() runs the indirect pass over the blocks never reached.
  void classify_lost();

  // find() is the index of the block holding `address` (interior pointers included; a block of
  // size 0 holds its own address), or SIZE_MAX.
  size_t find(uintptr_t address) const;

  uint64_t root_bytes() const { return root_bytes_; }

 private:
  void mark(size_t index, size_t from_block);
  void scan_words(uintptr_t begin, uintptr_t end, size_t from_block, bool allocator_data);

  ScanBlock* blocks_;
  size_t count_;
  uint32_t* frontier_;
  uintptr_t* begins_;
  size_t frontier_size_ = 0;
  uintptr_t lowest_ = 0, highest_ = 0;  // the blocks' span: most words fall outside it
  uint64_t root_bytes_ = 0;
  bool indirect_pass_ = false;
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_REACHABILITY_H_
