// PyTorch's CPU allocator and its profiler report, interposed by their mangled names, with no link
// dependency on libc10 (../shared/research/c10-cuda-hooks.md, sections 1-3):
//   c10::alloc_cpu(size_t), c10::free_cpu(void*)           -> domain c10_cpu (tensor storage)
//   c10::reportMemoryUsageToProfiler(void*, int64, ...)   -> domain c10_cuda for device blocks
// libc10 calls these through its PLT, so the definitions here win once the preload is first in
// symbol order. Each always chains to the real function (PyTorch's own profiler keeps working).
//
// Accounting is disjoint: the real alloc_cpu runs as an allocator call, so the posix_memalign
// inside it is not recorded again as heap. Heap and c10_cpu are shown side by side and summing
// them never counts a byte twice.
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "core/recorder.h"
#include "core/runtime.h"
#include "core/stack_capture.h"
#include "interpose/hook_guard.h"
#include "core/sys.h"

namespace leakscope::internal {
namespace {

// c10::Device: two int8 fields, passed by value in one register.
struct C10Device {
  int8_t type;  // c10::DeviceType: 0 = CPU, 1 = CUDA
  int8_t index;
};

constexpr int8_t kC10DeviceCpu = 0;

using AllocCpu = void* (*)(size_t);
using FreeCpu = void (*)(void*);
using ReportV1 = void (*)(void*, int64_t, int64_t, int64_t, C10Device);
using ReportV2 = void (*)(void*, int64_t, size_t, size_t, C10Device);

constexpr const char* kAllocCpu = "_ZN3c109alloc_cpuEm";
constexpr const char* kFreeCpu = "_ZN3c108free_cpuEPv";
constexpr const char* kReportV1 = "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE";
constexpr const char* kReportV2 = "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE";

struct Search {
  const char* symbol;
  void* found;
};

int search_libc10(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || strstr(name, "libc10") == nullptr || strstr(name, "libleakscope") != nullptr) return 0;
  // A handle lookup searches that object and its dependencies only, not the preload.
  void* handle = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return 0;
  search->found = dlsym(handle, search->symbol);
  dlclose(handle);
  return search->found != nullptr ? 1 : 0;
}

// resolve() finds the real function: next in symbol order, or, when libc10 was loaded with
// RTLD_LOCAL (Python's torch._C) and RTLD_NEXT cannot see it, in the loaded libc10 itself.
// Once per function; what dlsym and dlopen allocate meanwhile is leakscope's, not the program's.
void* resolve(const char* symbol, std::atomic<void*>* cache) {
  void* known = cache->load(std::memory_order_acquire);
  if (known != nullptr) return known;
  ++leakscope_tls_hook_depth;
  void* found = dlsym(RTLD_NEXT, symbol);
  if (found == nullptr) {
    Search search{symbol, nullptr};
    dl_iterate_phdr(search_libc10, &search);
    found = search.found;
  }
  --leakscope_tls_hook_depth;
  if (found != nullptr) cache->store(found, std::memory_order_release);
  return found;
}

std::atomic<void*> g_alloc_cpu{nullptr};
std::atomic<void*> g_free_cpu{nullptr};
std::atomic<void*> g_report_v1{nullptr};
std::atomic<void*> g_report_v2{nullptr};

void report_unresolved(const char* symbol) {
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) return;
  sys::write_stderr("leakscope: warning: cannot find the real ");
  sys::write_stderr(symbol);
  sys::write_stderr("; serving it with 64-byte aligned malloc\n");
}

// record_device_block() keeps a caching-allocator block in the device table, where the snapshot
// finds the cuda segment it lies in (device_section.h): the allocator's reserve in use.
void record_device_block(void* pointer, int64_t size, C10Device device) {
  if (device.type == kC10DeviceCpu || pointer == nullptr || size == 0) return;  // CPU: alloc_cpu saw it
  if (!hook_should_record()) return;
  Bookkeeping record;
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  if (size > 0) {
    recorder_device_alloc(DeviceBlock{address, static_cast<uint64_t>(size), address, 0, TripleId::kNone, Epoch{},
                                      DeviceKey::kLayeredAddress, Domain::kC10Cuda, device.index, false});
  } else {
    recorder_device_free(DeviceKey::kLayeredAddress, address);
  }
}

}  // namespace
}  // namespace leakscope::internal

using namespace leakscope::internal;

extern "C" __attribute__((visibility("default"))) void* leakscope_c10_alloc_cpu(size_t bytes) __asm__("_ZN3c109alloc_cpuEm");
extern "C" __attribute__((visibility("default"))) void leakscope_c10_free_cpu(void* data) __asm__("_ZN3c108free_cpuEPv");
extern "C" __attribute__((visibility("default"))) void leakscope_c10_report_v1(void*, int64_t, int64_t, int64_t, C10Device) __asm__(
    "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE");
extern "C" __attribute__((visibility("default"))) void leakscope_c10_report_v2(void*, int64_t, size_t, size_t, C10Device) __asm__(
    "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");

void* leakscope_c10_alloc_cpu(size_t bytes) {
  HookCaller caller(__builtin_return_address(0));
  auto real = reinterpret_cast<AllocCpu>(resolve(kAllocCpu, &g_alloc_cpu));
  auto call = [&]() -> void* {
    if (real != nullptr) return real(bytes);
    report_unresolved(kAllocCpu);
    void* block = nullptr;
    return posix_memalign(&block, 64, bytes == 0 ? 1 : bytes) == 0 ? block : nullptr;
  };
  if (!hook_should_record()) return call();
  void* block;
  {
    AllocatorCall inside;
    block = call();
  }
  if (block != nullptr) {
    Bookkeeping record;
    recorder_alloc(Domain::kC10Cpu, block, bytes);
  }
  return block;
}

void leakscope_c10_free_cpu(void* data) {
  auto real = reinterpret_cast<FreeCpu>(resolve(kFreeCpu, &g_free_cpu));
  if (data != nullptr && hook_should_record()) {
    {
      Bookkeeping record;
      recorder_free(data);  // before the real free, as for free()
    }
    AllocatorCall inside;
    real != nullptr ? real(data) : free(data);
    return;
  }
  real != nullptr ? real(data) : free(data);
}

void leakscope_c10_report_v1(void* pointer, int64_t size, int64_t allocated, int64_t reserved, C10Device device) {
  HookCaller caller(__builtin_return_address(0));
  record_device_block(pointer, size, device);
  if (auto real = reinterpret_cast<ReportV1>(resolve(kReportV1, &g_report_v1))) real(pointer, size, allocated, reserved, device);
}

void leakscope_c10_report_v2(void* pointer, int64_t size, size_t allocated, size_t reserved, C10Device device) {
  HookCaller caller(__builtin_return_address(0));
  record_device_block(pointer, size, device);
  if (auto real = reinterpret_cast<ReportV2>(resolve(kReportV2, &g_report_v2))) real(pointer, size, allocated, reserved, device);
}
