// File: leak_check.h
//
// The leak check: a LeakSanitizer-style reachability scan of the live blocks the allocation table
// holds, run at the teardown mark (leak_check=1), on request (leakscope_leak_check()) or on a
// signal (leak_check_signal). Inside a dl_iterate_phdr callback (so that the loader's lock is
// held and no paused thread holds it) and with every allocation-table lock taken, it pauses the
// program's other threads (world_stop.h), copies and sorts the blocks, scans the roots -- every
// module's writable segments but leakscope's, each thread's stack from its stack pointer, its
// registers, static TLS and DTV, the regions given to leakscope_register_root_region(), and with
// leak_check_mmap the program's own anonymous mappings -- marks (reachability.h), lets the
// threads go, and sums the lost blocks per triple. All its memory is mapped for it and unmapped
// after; it allocates nothing through libc while the threads are paused.
#ifndef LEAKSCOPE_CORE_LEAK_CHECK_H_
#define LEAKSCOPE_CORE_LEAK_CHECK_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/stream_format.h"

namespace leakscope::internal {

// What the program holds on a thread of its own that runs a leak check: its stack from where
// leakscope's frames end (leakscope's frames below hold stale copies of the program's earlier
// frames, which would keep lost blocks "reachable"), and its callee-saved registers as leakscope
// was entered (leakscope's frames save them where its stack is not scanned).
struct ProgramContext {
  uintptr_t stack_from;
  uint64_t registers[6];
};

// capture_program_context() fills *context at the entry of a runtime function the program called:
// inlined into it, so the frame is that function's.
__attribute__((always_inline)) inline void capture_program_context(ProgramContext* context) {
  asm volatile(
      "mov %%rbx, 0(%0)\n"
      "mov %%rbp, 8(%0)\n"
      "mov %%r12, 16(%0)\n"
      "mov %%r13, 24(%0)\n"
      "mov %%r14, 32(%0)\n"
      "mov %%r15, 40(%0)\n"
      :
      : "r"(context->registers)
      : "memory");
  context->stack_from = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
}

struct LeakCheckRequest {
  LeakCheckTrigger trigger;
  int stop_signal;
  bool mmap_roots;                 // the program's anonymous mappings are roots
  const ProgramContext* program;   // the calling thread is the program's: what it holds; null: it is leakscope's
  pid_t leave_running;             // another of leakscope's threads (the writer), not paused nor scanned; 0: none
};

// What one triple lost.
struct LostInTriple {
  uint32_t triple;
  uint64_t bytes, blocks;                    // directly lost
  uint64_t indirect_bytes, indirect_blocks;  // indirectly lost
};

struct LeakCheckResult {
  LeakCheckTrigger trigger = LeakCheckTrigger::kTeardown;
  uint64_t stopped_at_ns = 0;  // monotonic
  uint64_t stopped_ns = 0;
  uint32_t threads_paused = 0;  // the scanning thread included when it is the program's
  uint32_t threads_missed = 0;
  uint32_t threads_scanned_waiting = 0;  // of the missed, those whose stack was scanned where they wait in the kernel
  uint64_t blocks = 0, bytes = 0;
  uint64_t root_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t flags = 0;  // stream_format.h, kLeakCheck*
  LostInTriple* lost = nullptr;  // by triple id
  size_t lost_count = 0;
  size_t lost_mapped = 0;
  uint64_t lost_bytes = 0, indirectly_lost_bytes = 0;  // totals
};

// leak_check_run() runs one check; false when it could not (memory for it could not be mapped,
// the stop signal could not be installed). The caller holds the snapshot lock and none of the
// runtime's table locks, and releases *result with leak_check_release().
bool leak_check_run(const LeakCheckRequest& request, LeakCheckResult* result);
void leak_check_release(LeakCheckResult* result);

// Regions of the program's own memory that hold pointers to its blocks (a pool it mapped, a
// buffer a foreign runtime keeps): roots of every later check until unregistered. False when the
// table is full (kMaxRootRegions) or, for unregister, the region was not registered.
constexpr size_t kMaxRootRegions = 1024;
bool leak_check_register_root(uintptr_t begin, size_t size);
bool leak_check_unregister_root(uintptr_t begin, size_t size);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_LEAK_CHECK_H_
