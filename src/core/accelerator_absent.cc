// The accelerator seam (accelerator.h) of a build without an accelerator backend (no CUDA toolkit
// headers at build time): the options that ask for one say once that this build cannot.
#include "core/accelerator.h"
#include "core/runtime.h"

namespace leakscope::internal {

void accelerator_start(const Options& options) {
  if (options.cuda || options.nvtx) runtime_note("this libleakscope was built without CUDA: the cuda and nvtx options do nothing");
}

void accelerator_attach(void*) {}

bool accelerator_device_memory(int, DeviceMemoryInfo*) { return false; }

DeviceTracking accelerator_device_tracking() {
  return runtime_options().cuda ? DeviceTracking::kNotBuilt : DeviceTracking::kNotAsked;
}

}  // namespace leakscope::internal
