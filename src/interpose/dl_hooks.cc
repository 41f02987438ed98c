// Handlers for dlopen and dlclose: keep the module map current so that stacks in a library are
// symbolized even after it is unloaded. The real calls run the library's constructors and
// destructors, whose allocations are the program's, so no guard is held across them.
#include <dlfcn.h>

#include <atomic>

#include "core/accelerator.h"
#include "core/epoch.h"
#include "core/interpreter.h"
#include "core/module_map.h"
#include "core/runtime.h"
#include "core/startup_phase.h"
#include "core/sys.h"
#include "interpose/hooks.h"

namespace leakscope::internal {
namespace {

std::atomic<bool> g_deepbind_reported{false};

// refresh_modules() records the module map after a dlopen (`handle`: what it returned) or a
// dlclose (nullptr); a library dlopen'd late may bring an interpreter along.
void refresh_modules(void* handle) {
  if (!hook_should_record()) return;
  Bookkeeping bookkeeping;
  module_map_refresh(epoch_current(), false);
  if (handle != nullptr) {
    interpreter_attach(handle);
    accelerator_attach(handle);
  }
}

}  // namespace

void* handle_dlopen(const char* file, int mode) {
  // RTLD_DEEPBIND would bind the library to libc's malloc ahead of ours, hiding its allocations.
  if ((mode & RTLD_DEEPBIND) != 0 && g_runtime_state.load(std::memory_order_relaxed) == kActive) {
    mode &= ~RTLD_DEEPBIND;
    if (!g_deepbind_reported.exchange(true)) {
      sys::write_stderr("leakscope: note: RTLD_DEEPBIND dropped from dlopen so that the library's allocations stay visible\n");
    }
  }
  startup_phase_library_load_begins(interpreter_top_frame());
  void* handle = g_real.dlopen(file, mode);
  startup_phase_library_load_ends();
  if (handle != nullptr) {
    real_functions_count_library_load();
    refresh_modules(handle);
  }
  return handle;
}

int handle_dlclose(void* handle) {
  int result = g_real.dlclose(handle);
  if (result == 0) refresh_modules(nullptr);
  return result;
}

}  // namespace leakscope::internal
