// File: snapshot_writer.h
//
// Builds snapshots from the runtime's tables and appends them to the .lsc stream, one frame per
// snapshot written with write(2), so that a process killed at any moment leaves every completed
// snapshot readable. Everything is delta-encoded against what this file already holds: stacks,
// modules, threads, tasks, sites and triples appear once; counters, birth histograms and lifetime
// buckets only where they changed. Format: docs/FORMAT.md.
//
// Callers serialize all calls with the runtime's snapshot lock.
#ifndef LEAKSCOPE_CORE_SNAPSHOT_WRITER_H_
#define LEAKSCOPE_CORE_SNAPSHOT_WRITER_H_

#include <stdint.h>
#include <sys/types.h>

#include "core/stream_format.h"
#include "core/types.h"

namespace leakscope::internal {

struct LeakCheckResult;

struct ProcessDescription {
  pid_t pid;
  pid_t ppid;
  pid_t traced_parent_pid;  // the traced process this one was forked from, or 0
  uint64_t start_realtime_ns;
  uint64_t start_monotonic_ns;  // time 0 of every snapshot timestamp in this file
  uint64_t interval_ns;
  uint32_t depth;
  const char* options;  // effective options, "name=value,..."
};

// snapshot_writer_open() starts a new stream at `fd` (already open for writing `path`) and writes
// the file header and the process frame. Everything known so far will be emitted again by the
// next snapshot, but what a forked child's parent had written to its own stream before the fork
// (snapshot_writer_after_fork_child()): the child's process frame names that stream and how far
// it is needed, and readers load it first (docs/FORMAT.md). The descriptor is moved out of the low range
// and checked before every write: if the program closes it or reuses its number, the writer
// reopens `path` (when it is still the same file) rather than write into the program's files.
// Returns 0 or -errno.
int snapshot_writer_open(int fd, const char* path, const ProcessDescription& process);

// snapshot_writer_write() closes the current epoch, builds the snapshot and appends it.
// Returns 0 or -errno (-ESTALE: the output file is no longer reachable); after a failure the stream must not be written to again (the runtime stops
// tracking), since what this snapshot emitted is considered sent. Not thread-safe
// (see above); not signal-safe except as used by the fatal-signal path, which only calls it when
// the interrupted thread held none of the runtime's locks.
// `leak_check`, when given, is a leak check's result, written as the snapshot's LEAK_CHECK section.
int snapshot_writer_write(SnapshotReason reason, int signal_number, bool final, const LeakCheckResult* leak_check = nullptr);

// snapshot_writer_after_fork_child() notes, in a fork child, the stream the parent writes and the
// definitions it holds (all the parent had emitted), so that the child's stream needs no second
// copy of them. Call before the child opens its own stream.
void snapshot_writer_after_fork_child();

// snapshot_writer_fd() is the stream's descriptor, or -1.
int snapshot_writer_fd();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_SNAPSHOT_WRITER_H_
