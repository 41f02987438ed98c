#include "core/startup_phase.h"

#include <string.h>

#include <atomic>

#include "core/stream_format.h"

namespace leakscope::internal {
namespace {

constinit std::atomic<bool> g_before_main{true};
__thread int t_library_loads __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

uint64_t startup_phase_marker() {
  if (t_library_loads > 0) return kLibraryLoadFrame;
  return g_before_main.load(std::memory_order_relaxed) ? kBeforeMainFrame : 0;
}

int startup_stack_cut(uintptr_t* frames, int depth, int kept, uint64_t marker, int from, int end, int max_depth) {
  if (kept > depth) kept = depth;
  if (kept >= max_depth) return max_depth;
  if (end > depth) end = depth;
  int moved = end > from ? end - from : 0;
  if (kept + 1 + moved > max_depth) moved = max_depth - kept - 1;
  memmove(frames + kept + 1, frames + from, static_cast<size_t>(moved) * sizeof(uintptr_t));
  frames[kept] = marker;
  return kept + 1 + moved;
}

void startup_phase_main_begins() { g_before_main.store(false, std::memory_order_relaxed); }

void startup_phase_second_thread() { g_before_main.store(false, std::memory_order_relaxed); }

void startup_phase_library_load_begins() { ++t_library_loads; }

void startup_phase_library_load_ends() { --t_library_loads; }

}  // namespace leakscope::internal
