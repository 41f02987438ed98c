// File: high_water.h
//
// Tracked host memory (heap, c10_cpu, mmap, brk) as the program's threads move it, kept cheaply
// and approximately, so that the writer is asked for an extra snapshot when it rises well above the
// highest any snapshot saw (the high_water option). A burst that comes and goes between two
// periodic snapshots (a request that builds a 2 GiB batch for 300 ms) is then seen near its top,
// with what held it, where it would otherwise leave no trace but a process killed for it. Device
// memory has a total and a bar of its own, as a CUDA out-of-memory error has its own moment.
//
// Each thread adds to a counter of its own and publishes it to the shared total 256 KiB at a time:
// a hook pays one thread-local add and compare, and the total is off by at most that per thread.
#ifndef LEAKSCOPE_CORE_HIGH_WATER_H_
#define LEAKSCOPE_CORE_HIGH_WATER_H_

#include <stdint.h>

#include "core/types.h"

// Bytes this thread added to tracked host memory (or took from it) since it last published.
extern __thread int64_t leakscope_tls_unpublished_bytes __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace leakscope::internal {

// Small enough that a pool of a few hundred threads each holding less than it stays well within
// the least rise (200 threads: 50 MiB); large enough that a thread publishes once in thousands of
// small allocations.
constexpr int64_t kHighWaterPublishBytes = int64_t{256} << 10;

// high_water_publish() adds the thread's unpublished bytes to the total, and asks for a snapshot
// when the total passes the bar. Async-signal-safe.
void high_water_publish();

// high_water_add() counts `bytes` more (or, negative, fewer) of tracked host memory.
LS_ALWAYS_INLINE void high_water_add(int64_t bytes) {
  leakscope_tls_unpublished_bytes += bytes;
  if (LS_UNLIKELY(leakscope_tls_unpublished_bytes >= kHighWaterPublishBytes ||
                  leakscope_tls_unpublished_bytes <= -kHighWaterPublishBytes)) {
    high_water_publish();
  }
}

// Devices whose memory has a total and a bar of its own besides the sum of all devices: a model
// spread over several runs out of memory on one, which may rise while the sum does not (a burst
// on one device as another lets go). Higher ordinals count in the sum only.
constexpr int kHighWaterDevices = 16;

// high_water_add_device() counts `bytes` more (or fewer) of device memory on device `device` (its
// ordinal, -1 when unknown): cuda, cuda_managed and c10_cuda blocks, not pinned host memory. A
// caching allocator's tensors count beside its segments, as either may rise first. Device blocks
// are few and large: published at once.
void high_water_add_device(int device, int64_t bytes);

// high_water_init() sets the least rise above the highest snapshot that asks for another (the
// option; 0: never).
void high_water_init(uint64_t least_rise);

// The published totals at a moment: what a snapshot beginning then sees of them.
struct HighWaterSeen {
  int64_t host = 0;
  int64_t device = 0;  // all devices
  int64_t by_device[kHighWaterDevices] = {};
};
HighWaterSeen high_water_seen();

// high_water_after_snapshot() sets each bar once a snapshot is written, from `seen`, the totals as
// it began (what it shows; threads go on allocating while it is written): the highest total any
// snapshot saw, plus the larger of the least rise and an eighth of it. For the writer, under the
// snapshot lock.
void high_water_after_snapshot(const HighWaterSeen& seen);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_HIGH_WATER_H_
