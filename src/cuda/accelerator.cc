// The accelerator seam (core/accelerator.h) for CUDA: the injection variables that make the
// driver (CUDA_INJECTION64_PATH) and NVTX (NVTX_INJECTION64_PATH) load this very library and call
// InitializeInjection() and InitializeInjectionNvtx2() in it, so that the state is one.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <atomic>

#include "core/accelerator.h"
#include "core/environment.h"
#include "core/runtime.h"
#include "cuda/cupti_subscriber.h"
#include "interpose/hook_guard.h"

namespace leakscope::internal {
namespace {

// Subscribe when libcuda is loaded, as the driver will not call this library itself (its
// injection variable names another).
std::atomic<bool> g_attach_on_load{false};

bool own_library_path(char* out, size_t size) {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&accelerator_start), &self) == 0 || self.dli_fname == nullptr) return false;
  char resolved[PATH_MAX];
  const char* path = realpath(self.dli_fname, resolved) != nullptr ? resolved : self.dli_fname;
  return static_cast<size_t>(snprintf(out, size, "%s", path)) < size;
}

bool same_file(const char* a, const char* b) {
  struct stat first, second;
  return stat(a, &first) == 0 && stat(b, &second) == 0 && first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

// claim() points the injection variable `name` at this library, unless it names another one that
// `keep` accepts; returns whether it names this library now.
bool claim(const char* name, const char* self, bool (*keep)(const char* current)) {
  const char* current = getenv(name);
  if (current != nullptr && *current != '\0' && !same_file(current, self) && keep(current)) {
    char line[2 * 4096 + 128];
    snprintf(line, sizeof(line), "%s names %s; leakscope leaves it", name, current);
    runtime_note(line);
    return false;
  }
  return environment_set(name, self, true);
}

bool driver_loaded() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

}  // namespace

void accelerator_start(const Options& options) {
  if (!options.cuda && !options.nvtx) return;
  char self[4096];
  if (!own_library_path(self, sizeof(self))) {
    runtime_note("cannot tell where libleakscope is; the cuda and nvtx options are off");
    return;
  }
  if (options.cuda && !claim("CUDA_INJECTION64_PATH", self, [](const char*) { return true; })) {
    g_attach_on_load.store(true, std::memory_order_release);
    accelerator_attach(nullptr);
  }
  // libcupti as NVTX's injection would take CUPTI's one subscriber slot (and crashes on some
  // calls): leakscope takes its place.
  if (options.nvtx) claim("NVTX_INJECTION64_PATH", self, [](const char* current) { return strstr(current, "libcupti") == nullptr; });
}

DeviceTracking accelerator_device_tracking() {
  return runtime_options().cuda ? cupti_outcome() : DeviceTracking::kNotAsked;
}

void accelerator_attach(void*) {
  if (!g_attach_on_load.load(std::memory_order_acquire) || !driver_loaded()) return;
  g_attach_on_load.store(false, std::memory_order_release);
  cupti_subscribe();
}

}  // namespace leakscope::internal

// InitializeInjection() is what the CUDA driver calls, during cuInit, in the library
// CUDA_INJECTION64_PATH names. Non-zero tells the driver it succeeded; it always does, so that a
// program never fails for leakscope's sake.
LS_EXPORT int InitializeInjection(void) {
  using namespace leakscope::internal;
  // A library's static initializer may initialize CUDA before leakscope's own ran: init now.
  if (!hook_should_record() || !runtime_options().cuda) return 1;
  Bookkeeping bookkeeping;
  cupti_subscribe();
  return 1;
}
