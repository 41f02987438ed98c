#include "core/types.h"

namespace leakscope::internal {

const char* domain_name(Domain domain) {
  switch (domain) {
    case Domain::kHeap: return "heap";
    case Domain::kMmap: return "mmap";
    case Domain::kBrk: return "brk";
    case Domain::kC10Cpu: return "c10_cpu";
    case Domain::kCuda: return "cuda";
    case Domain::kCudaHost: return "cuda_host";
    case Domain::kCudaManaged: return "cuda_managed";
    case Domain::kC10Cuda: return "c10_cuda";
  }
  return "unknown";
}

}  // namespace leakscope::internal
