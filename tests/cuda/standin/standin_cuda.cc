// A stand-in CUDA driver (libcuda.so.1) for the CUDA tests, on a machine without a GPU: the driver
// API calls the fixtures make, with the driver's own behaviour where leakscope depends on it.
// cuInit loads the library CUDA_INJECTION64_PATH names and calls its InitializeInjection; every
// memory call is bracketed by CUPTI driver-API callbacks (API entry and exit, the call's real
// parameter struct and result) through the stand-in libcupti's dispatch; destroying a context
// issues the resource domain's CONTEXT_DESTROY_STARTING. Device memory is address space only: each
// device has 80 GiB, handed out from an address range of its own, and a request beyond what is
// left fails with CUDA_ERROR_OUT_OF_MEMORY. Host and managed memory are real mappings. VMM memory
// released while mapped stays until its last mapping is unmapped, as the driver keeps it.
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <map>
#include <mutex>

#include "standin.h"

namespace {

constexpr uint64_t kDeviceBytes = uint64_t{80} << 30;
constexpr int kDevices = 2;

struct Allocation {
  uint64_t size;
  StandinContext* context;
  bool host;  // a real mapping to unmap
};

std::mutex g_mutex;
StandinDispatch g_dispatch = nullptr;
bool g_initialized = false;
uint64_t g_used[kDevices] = {};
uint64_t g_next_address[kDevices] = {0x7e0000000000, 0x7f0000000000};  // 1 TiB apart
std::map<uint64_t, Allocation> g_allocations;                   // by address
struct Handle {
  uint64_t size;
  StandinContext* context;
  int mappings;
  bool released;  // its memory goes with its last mapping
};
std::map<uint64_t, Handle> g_handles;               // VMM handle -> its memory
std::map<uint64_t, uint64_t> g_mappings;            // mapped address -> handle
uint64_t g_next_handle = 1;
unsigned g_next_context_id = 1;
uint32_t g_correlation = 0;
thread_local StandinContext* tls_context = nullptr;

uint64_t take_address(int device, uint64_t size) {
  uint64_t address = g_next_address[device];
  g_next_address[device] += (size + 0x1fffff) & ~uint64_t{0x1fffff};  // 2 MiB apart, as the driver's granularity
  return address;
}

// driver_call() runs `body` between the entry and exit callbacks of driver call `id`.
template <typename Params, typename Body>
CUresult driver_call(CUpti_CallbackId id, const char* name, Params* params, Body body) {
  CUpti_CallbackData data = {};
  data.functionName = name;
  data.functionParams = params;
  data.context = reinterpret_cast<CUcontext>(tls_context);
  data.contextUid = tls_context != nullptr ? tls_context->id : 0;
  data.correlationId = ++g_correlation;
  CUresult result = CUDA_SUCCESS;
  data.functionReturnValue = &result;
  data.callbackSite = CUPTI_API_ENTER;
  if (g_dispatch != nullptr) g_dispatch(CUPTI_CB_DOMAIN_DRIVER_API, id, &data);
  result = body();
  data.callbackSite = CUPTI_API_EXIT;
  if (g_dispatch != nullptr) g_dispatch(CUPTI_CB_DOMAIN_DRIVER_API, id, &data);
  return result;
}

CUresult device_alloc(CUdeviceptr* out, uint64_t size) {
  if (tls_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (out == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mutex);
  int device = tls_context->device;
  if (g_used[device] + size > kDeviceBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t address = take_address(device, size);
  g_used[device] += size;
  g_allocations[address] = Allocation{size, tls_context, false};
  *out = address;
  return CUDA_SUCCESS;
}

CUresult host_alloc(void** out, uint64_t size) {
  if (tls_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  void* mapping = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_allocations[reinterpret_cast<uintptr_t>(mapping)] = Allocation{size, tls_context, true};
  *out = mapping;
  return CUDA_SUCCESS;
}

CUresult release(uint64_t address) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto found = g_allocations.find(address);
  if (found == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  if (found->second.host) {
    munmap(reinterpret_cast<void*>(address), found->second.size);
  } else {
    g_used[found->second.context->device] -= found->second.size;
  }
  g_allocations.erase(found);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

void standin_cuda_set_dispatch(StandinDispatch dispatch) { g_dispatch = dispatch; }

CUresult cuInit(unsigned int) {
  if (g_initialized) return CUDA_SUCCESS;
  g_initialized = true;
  if (const char* injection = getenv("CUDA_INJECTION64_PATH"); injection != nullptr && *injection != '\0') {
    void* library = dlopen(injection, RTLD_NOW);
    auto initialize = library != nullptr ? reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection")) : nullptr;
    if (initialize != nullptr) initialize();
  }
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  *count = kDevices;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext* context, CUctxCreateParams*, unsigned int, CUdevice device) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* created = new StandinContext{device, g_next_context_id++};
  tls_context = created;
  *context = reinterpret_cast<CUcontext>(created);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  tls_context = reinterpret_cast<StandinContext*>(context);
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext context) {
  auto* destroyed = reinterpret_cast<StandinContext*>(context);
  CUpti_ResourceData data = {};
  data.context = context;
  if (g_dispatch != nullptr) g_dispatch(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &data);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto it = g_allocations.begin(); it != g_allocations.end();) {
      if (it->second.context != destroyed) {
        ++it;
        continue;
      }
      if (it->second.host) munmap(reinterpret_cast<void*>(it->first), it->second.size);
      else g_used[destroyed->device] -= it->second.size;
      it = g_allocations.erase(it);
    }
  }
  if (tls_context == destroyed) tls_context = nullptr;
  delete destroyed;
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (tls_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(g_mutex);
  *total_bytes = kDeviceBytes;
  *free_bytes = kDeviceBytes - g_used[tls_context->device];
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  cuMemAlloc_v2_params params{dptr, bytesize};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", &params, [&] { return device_alloc(dptr, bytesize); });
}

CUresult cuMemAllocPitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int element_size) {
  cuMemAllocPitch_v2_params params{dptr, pitch, width, height, element_size};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, "cuMemAllocPitch_v2", &params, [&] {
    *pitch = (width + 511) & ~size_t{511};
    return device_alloc(dptr, uint64_t{*pitch} * height);
  });
}

CUresult cuMemFree(CUdeviceptr dptr) {
  cuMemFree_v2_params params{dptr};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", &params, [&] { return release(dptr); });
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  cuMemAllocAsync_params params{dptr, bytesize, stream};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, "cuMemAllocAsync", &params, [&] { return device_alloc(dptr, bytesize); });
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {
  cuMemAllocFromPoolAsync_params params{dptr, bytesize, pool, stream};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", &params,
                     [&] { return device_alloc(dptr, bytesize); });
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  cuMemFreeAsync_params params{dptr, stream};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, "cuMemFreeAsync", &params, [&] { return release(dptr); });
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  cuMemAllocManaged_params params{dptr, bytesize, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, "cuMemAllocManaged", &params, [&] {
    void* mapping = nullptr;
    CUresult result = host_alloc(&mapping, bytesize);
    if (result == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(mapping);
    return result;
  });
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  cuMemHostAlloc_params params{pp, bytesize, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, "cuMemHostAlloc", &params, [&] { return host_alloc(pp, bytesize); });
}

CUresult cuMemAllocHost(void** pp, size_t bytesize) {
  cuMemAllocHost_v2_params params{pp, bytesize};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2", &params, [&] { return host_alloc(pp, bytesize); });
}

CUresult cuMemFreeHost(void* p) {
  cuMemFreeHost_params params{p};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, "cuMemFreeHost", &params,
                     [&] { return release(reinterpret_cast<uintptr_t>(p)); });
}

CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int flags) {
  cuMemHostRegister_v2_params params{p, bytesize, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, "cuMemHostRegister_v2", &params,
                     [&] { return p != nullptr && tls_context != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; });
}

CUresult cuMemHostUnregister(void* p) {
  cuMemHostUnregister_params params{p};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, "cuMemHostUnregister", &params, [&] { return CUDA_SUCCESS; });
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags) {
  cuMemAddressReserve_params params{ptr, size, alignment, addr, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, "cuMemAddressReserve", &params, [&] {
    if (tls_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::mutex> lock(g_mutex);
    *ptr = take_address(tls_context->device, size);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  cuMemAddressFree_params params{ptr, size};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, "cuMemAddressFree", &params, [&] { return CUDA_SUCCESS; });
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop, unsigned long long flags) {
  cuMemCreate_params params{handle, size, prop, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate", &params, [&] {
    if (prop == nullptr || tls_context == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_mutex);
    int device = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : tls_context->device;
    if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    if (g_used[device] + size > kDeviceBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    g_used[device] += size;
    *handle = g_next_handle++;
    g_handles[*handle] = Handle{size, tls_context, 0, false};
    return CUDA_SUCCESS;
  });
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  cuMemRelease_params params{handle};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, "cuMemRelease", &params, [&] {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto found = g_handles.find(handle);
    if (found == g_handles.end() || found->second.released) return CUDA_ERROR_INVALID_VALUE;
    // As the driver does: memory still mapped is freed with its last mapping.
    if (found->second.mappings > 0) {
      found->second.released = true;
      return CUDA_SUCCESS;
    }
    g_used[found->second.context->device] -= found->second.size;
    g_handles.erase(found);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags) {
  cuMemMap_params params{ptr, size, offset, handle, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap", &params, [&] {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto found = g_handles.find(handle);
    if (found == g_handles.end() || found->second.released) return CUDA_ERROR_INVALID_VALUE;
    ++found->second.mappings;
    g_mappings[ptr] = handle;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  cuMemUnmap_params params{ptr, size};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, "cuMemUnmap", &params, [&] {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto mapping = g_mappings.find(ptr);
    if (mapping == g_mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    auto found = g_handles.find(mapping->second);
    g_mappings.erase(mapping);
    if (found != g_handles.end() && --found->second.mappings == 0 && found->second.released) {
      g_used[found->second.context->device] -= found->second.size;
      g_handles.erase(found);
    }
    return CUDA_SUCCESS;
  });
}

}  // extern "C"
