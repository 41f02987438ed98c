// File: device_layers.h
//
// How the device domains layer (docs/ANALYSIS.md, "Device memory"): a c10_cuda block (a tensor's
// block from PyTorch's caching allocator) lives inside a cuda block (one of that allocator's
// segments). A cuda site whose blocks held c10_cuda blocks is the caching allocator's reserve: what
// it holds in use is judged at the tensors' own sites, the rest is cached, free for reuse. So the
// reserve is never a leak of its own, it is shown apart like the runtime's residue, and a group
// never adds the two layers into one total.
#ifndef LEAKSCOPE_REPORT_DEVICE_LAYERS_H_
#define LEAKSCOPE_REPORT_DEVICE_LAYERS_H_

#include <string>

#include "report/run_state.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// The residue reason (SiteReport::runtime) of a caching allocator's reserve.
extern const char* const kCachingAllocatorReserve;

// caching_allocator_reserve() is kCachingAllocatorReserve for a site of the cuda domain whose
// blocks held c10_cuda blocks at any snapshot `state` has read, or whose stack `frames` passes
// through PyTorch's caching allocator (libc10_cuda: tensors made and freed between two snapshots
// leave no trace in them); else nullptr.
const char* caching_allocator_reserve(const RunState& state, uint32_t site,
                                      const std::vector<const SymbolizedFrame*>& frames);

// is_caching_allocator_module() tells whether the module at `path` is PyTorch's CUDA caching
// allocator (libc10_cuda), through which a reserve's segments are allocated.
bool is_caching_allocator_module(const std::string& path);

// is_driver_domain() is true for cuda, cuda_host and cuda_managed: memory the driver hands out, the
// layer beneath the program's objects, grouped apart from them.
bool is_driver_domain(Domain domain);

// reserve_text() is what the report says of a reserve group holding `live_bytes`, `inner_bytes` of
// them in c10_cuda blocks.
std::string reserve_text(int64_t live_bytes, int64_t inner_bytes);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DEVICE_LAYERS_H_
