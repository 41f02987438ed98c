#include "core/high_water.h"

#include <atomic>

#include "core/runtime.h"

__thread int64_t leakscope_tls_unpublished_bytes __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;

namespace leakscope::internal {
namespace {

constexpr int64_t kNever = INT64_MAX;

int64_t g_least_rise = 0;  // 0: off

// One kind of memory's total and the bar it must pass to ask for a snapshot.
struct Water {
  std::atomic<int64_t> total{0};
  std::atomic<int64_t> bar{kNever};
  int64_t highest = 0;  // the highest total a snapshot saw; the writer's alone

  // add() adds `delta` to the total and asks for a snapshot when that passes the bar.
  void add(int64_t delta) {
    int64_t now = total.fetch_add(delta, std::memory_order_relaxed) + delta;
    if (delta > 0 && now >= bar.load(std::memory_order_relaxed)) ask();
  }
  // ask() asks once per bar: the writer sets the next one as it writes the snapshot.
  void ask() {
    bar.store(kNever, std::memory_order_relaxed);
    runtime_request_high_water_snapshot();
  }
  void reset() {
    highest = 0;
    bar.store(g_least_rise != 0 ? g_least_rise : kNever, std::memory_order_relaxed);
  }
  void after_snapshot(int64_t seen) {
    if (seen > highest) highest = seen;
    int64_t rise = highest / 8 > g_least_rise ? highest / 8 : g_least_rise;
    bar.store(highest + rise, std::memory_order_relaxed);
    // Passed already while the snapshot was written, by threads that may publish nothing more.
    if (total.load(std::memory_order_relaxed) >= highest + rise) ask();
  }
};

constinit Water g_host;
constinit Water g_device;
constinit Water g_each_device[kHighWaterDevices];

}  // namespace

void high_water_publish() {
  int64_t delta = leakscope_tls_unpublished_bytes;
  leakscope_tls_unpublished_bytes = 0;
  g_host.add(delta);
}

void high_water_add_device(int device, int64_t bytes) {
  g_device.add(bytes);
  if (device >= 0 && device < kHighWaterDevices) g_each_device[device].add(bytes);
}

void high_water_init(uint64_t least_rise) {
  g_least_rise = least_rise > static_cast<uint64_t>(kNever / 2) ? kNever / 2 : static_cast<int64_t>(least_rise);
  g_host.reset();
  g_device.reset();
  for (Water& device : g_each_device) device.reset();
}

HighWaterSeen high_water_seen() {
  HighWaterSeen seen;
  seen.host = g_host.total.load(std::memory_order_relaxed);
  seen.device = g_device.total.load(std::memory_order_relaxed);
  for (int device = 0; device < kHighWaterDevices; ++device) {
    seen.by_device[device] = g_each_device[device].total.load(std::memory_order_relaxed);
  }
  return seen;
}

void high_water_after_snapshot(const HighWaterSeen& seen) {
  if (g_least_rise == 0) return;
  g_host.after_snapshot(seen.host);
  g_device.after_snapshot(seen.device);
  for (int device = 0; device < kHighWaterDevices; ++device) g_each_device[device].after_snapshot(seen.by_device[device]);
}

}  // namespace leakscope::internal
