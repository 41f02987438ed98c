#include "report/device_layers.h"

#include <fmt/format.h>

#include "report/frame_roles.h"
#include "report/units.h"

namespace leakscope::report {

const char* const kCachingAllocatorReserve = "the caching allocator's reserve of device memory";

const char* caching_allocator_reserve(const RunState& state, uint32_t site,
                                      const std::vector<const SymbolizedFrame*>& frames) {
  if (site >= state.sites().size() || state.sites()[site].domain != Domain::kCuda) return nullptr;
  if (state.held_inner_blocks(site)) return kCachingAllocatorReserve;
  for (const SymbolizedFrame* frame : frames) {
    if (is_caching_allocator_module(frame->module)) return kCachingAllocatorReserve;
  }
  return nullptr;
}

bool is_caching_allocator_module(const std::string& path) { return module_base_name(path).rfind("libc10_cuda", 0) == 0; }

bool is_driver_domain(Domain domain) {
  return domain == Domain::kCuda || domain == Domain::kCudaHost || domain == Domain::kCudaManaged;
}

std::string reserve_text(int64_t live_bytes, int64_t inner_bytes) {
  return fmt::format("reserved by the caching allocator, not leaked: {} of its {} in c10_cuda tensors now (judged at "
                     "their own sites), the rest cached for reuse (leakscope check leaves it out)",
                     format_bytes(inner_bytes), format_bytes(live_bytes));
}

}  // namespace leakscope::report
