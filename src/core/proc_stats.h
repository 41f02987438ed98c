// File: proc_stats.h
//
// Process memory as the kernel sees it, taken at every snapshot so that reports can set tracked
// bytes beside RSS/PSS. Reads /proc/thread-self/status and smaps_rollup with raw syscalls.
//
// status is counters the kernel keeps (about 30 us to read); smaps_rollup walks every page table
// of the process under its memory-map lock (12 ms for python3 with torch loaded), stalling the
// program's mmap and munmap meanwhile. So PSS, the only figure that needs it, is read again only
// once 50 times as long as its last read took has passed (the walk holds the lock at most 2 % of
// the time); a snapshot in between carries the last PSS read.
#ifndef LEAKSCOPE_CORE_PROC_STATS_H_
#define LEAKSCOPE_CORE_PROC_STATS_H_

#include <stdint.h>

namespace leakscope::internal {

struct ProcStats {
  uint64_t rss_bytes;
  uint64_t pss_bytes;
  uint64_t anon_bytes;   // RssAnon
  uint64_t file_bytes;   // RssFile
  uint64_t shmem_bytes;  // RssShmem
  uint64_t swap_bytes;
  uint64_t hwm_bytes;    // peak RSS
};

// proc_stats_read() fills what the kernel offers and leaves the rest 0; PSS is read anew when
// due (above) or when `fresh` (the last snapshot of a process). Allocation-free and
// async-signal-safe (open/read/close only); one caller at a time (the snapshot writer).
void proc_stats_read(ProcStats* stats, bool fresh);

// proc_stats_field_kb() finds "Name:   123 kB" in `text` and returns the bytes, or 0.
uint64_t proc_stats_field_bytes(const char* text, const char* name);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_PROC_STATS_H_
