#include "core/startup_phase.h"

#include <string.h>

#include <atomic>

#include "core/stream_format.h"

namespace leakscope::internal {
namespace {

constinit std::atomic<bool> g_before_main{true};
__thread int t_library_loads __attribute__((tls_model("initial-exec"))) = 0;

constexpr uint32_t kBeforeMainScope = 1;
constinit std::atomic<uint32_t> g_last_scope{kBeforeMainScope};
// The innermost interpreted frame as each load this thread is in began, outermost load first (0:
// none, or more loads nested than kept), and the scope of the innermost load.
constexpr int kKeptLoads = 16;
__thread uintptr_t t_load_frames[kKeptLoads] __attribute__((tls_model("initial-exec")));
__thread StartupScope t_load_scope __attribute__((tls_model("initial-exec"))) = {0, 0};

// A load's stacks are named by their caller alone while interpreted frames name the code that
// called dlopen: native frames would have to be unwound to, and a path too deep (or on another
// stack, a coroutine's) does not reach them.
StartupScope load_scope(int load) {
  uintptr_t frame = load < kKeptLoads ? t_load_frames[load] : 0;
  if (frame == 0) return StartupScope{0, 0};
  return StartupScope{g_last_scope.fetch_add(1, std::memory_order_relaxed) + 1, frame};
}

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

void startup_phase_library_load_begins(uintptr_t interpreter_frame) {
  if (t_library_loads < kKeptLoads) t_load_frames[t_library_loads] = interpreter_frame;
  t_load_scope = load_scope(t_library_loads++);
}

void startup_phase_library_load_ends() {
  // An outer load goes on as a scope of its own, named by the frame it began under: code it ran
  // since (an initializer that runs Python code) is not suspended in it.
  t_load_scope = --t_library_loads > 0 ? load_scope(t_library_loads - 1) : StartupScope{0, 0};
}

StartupScope startup_phase_scope() {
  if (t_library_loads > 0) return t_load_scope;
  return g_before_main.load(std::memory_order_relaxed) ? StartupScope{kBeforeMainScope, 0} : StartupScope{0, 0};
}

}  // namespace leakscope::internal
