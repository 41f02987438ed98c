#include "core/high_water.h"

#include <atomic>

#include "core/runtime.h"

__thread int64_t leakscope_tls_unpublished_bytes __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;

namespace leakscope::internal {
namespace {

constexpr int64_t kNever = INT64_MAX;

constinit std::atomic<int64_t> g_total{0};
constinit std::atomic<int64_t> g_bar{kNever};
int64_t g_least_rise = 0;  // 0: off
int64_t g_highest = 0;     // the highest total a snapshot saw; the writer's alone

}  // namespace

void high_water_publish() {
  int64_t delta = leakscope_tls_unpublished_bytes;
  leakscope_tls_unpublished_bytes = 0;
  int64_t total = g_total.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0 && total >= g_bar.load(std::memory_order_relaxed)) {
    // Asked once per bar: the writer sets the next one as it writes the snapshot.
    g_bar.store(kNever, std::memory_order_relaxed);
    runtime_request_high_water_snapshot();
  }
}

void high_water_init(uint64_t least_rise) {
  g_least_rise = least_rise > static_cast<uint64_t>(kNever / 2) ? kNever / 2 : static_cast<int64_t>(least_rise);
  g_highest = 0;
  g_bar.store(g_least_rise != 0 ? g_least_rise : kNever, std::memory_order_relaxed);
}

void high_water_after_snapshot(int64_t seen) {
  if (g_least_rise == 0) return;
  if (seen > g_highest) g_highest = seen;
  int64_t rise = g_highest / 8 > g_least_rise ? g_highest / 8 : g_least_rise;
  int64_t bar = g_highest + rise;
  g_bar.store(bar, std::memory_order_relaxed);
  // Passed already while the snapshot was written, by threads that may publish nothing more.
  if (g_total.load(std::memory_order_relaxed) >= bar) {
    g_bar.store(kNever, std::memory_order_relaxed);
    runtime_request_high_water_snapshot();
  }
}

int64_t high_water_total() { return g_total.load(std::memory_order_relaxed); }

}  // namespace leakscope::internal
