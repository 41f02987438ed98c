// File: snapshot_schedule.h
//
// When the writer thread takes its next periodic snapshot. With `ramp` on, a young process is
// snapshotted more often: a 2 s CI run or the first seconds of a service then has 20-odd snapshots
// to judge instead of two. The epoch length follows the process's age t:
//
//   length(t) = clamp(t / 16, floor, interval),   floor = min(interval, max(interval / 20, 20 ms))
//
// so with the default 1 s interval: 50 ms epochs until 0.8 s, then each 1/16 longer than the one
// before, reaching 1 s at 16 s: about 34 snapshots in a 2 s run instead of 2, and a leak that
// starts after an 8-second `import torch` still gets a snapshot every half second. Past 16 s the
// ramp costs nothing. A snapshot that took long (a process with a million stacks) stretches the
// ramp: an epoch is never shorter than 4 times the last snapshot's cost, so at most a quarter of
// the writer's time goes to the extra snapshots; it is never longer than `interval`.
#ifndef LEAKSCOPE_CORE_SNAPSHOT_SCHEDULE_H_
#define LEAKSCOPE_CORE_SNAPSHOT_SCHEDULE_H_

#include <stdint.h>

namespace leakscope::internal {

constexpr uint64_t kRampFloorNs = 20000000;  // 20 ms
constexpr uint64_t kRampDivisor = 16;         // epoch length = age / 16 while ramping
constexpr uint64_t kRampCostFactor = 4;       // epoch length >= 4 x the last snapshot's cost

// snapshot_epoch_length() is the length of the epoch that starts at `age_ns` (time since the
// process, or fork, started), given the last snapshot's cost. Pure; signal-safe.
inline uint64_t snapshot_epoch_length(uint64_t age_ns, uint64_t interval_ns, uint64_t last_cost_ns, bool ramp) {
  if (!ramp) return interval_ns;
  uint64_t floor = interval_ns / 20 > kRampFloorNs ? interval_ns / 20 : kRampFloorNs;
  if (floor > interval_ns) floor = interval_ns;
  uint64_t length = age_ns / kRampDivisor;
  if (length < floor) length = floor;
  if (length < kRampCostFactor * last_cost_ns) length = kRampCostFactor * last_cost_ns;
  return length < interval_ns ? length : interval_ns;
}

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_SNAPSHOT_SCHEDULE_H_
