#include "cuda/driver_callbacks.h"

#include <atomic>

#include "core/recorder.h"
#include "core/runtime.h"
#include "cuda/device_memory.h"
#include "cuda/driver_frames.h"
#include "interpose/hook_guard.h"

namespace leakscope::internal {
namespace {

std::atomic<DeviceIdFunction> g_device_lookup{nullptr};

uint64_t address_of(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

int device_of(CUcontext context) {
  DeviceIdFunction lookup = g_device_lookup.load(std::memory_order_acquire);
  uint32_t device = 0;
  if (lookup == nullptr || context == nullptr || lookup(context, &device) != CUPTI_SUCCESS) return -1;
  return static_cast<int>(device);
}

// stream_ordered() tells the calls a memory pool serves (cudaMallocAsync), made as often as malloc.
bool stream_ordered(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return true;
    default:
      return false;
  }
}

bool succeeded(const CUpti_CallbackData* call) {
  return call->callbackSite == CUPTI_API_EXIT && call->functionReturnValue != nullptr &&
         *static_cast<const CUresult*>(call->functionReturnValue) == CUDA_SUCCESS;
}

void record_block(const CUpti_CallbackData* call, DeviceKey kind, Domain domain, uint64_t key, uint64_t size,
                  uintptr_t begin, int device) {
  if (size == 0) return;
  recorder_device_alloc(DeviceBlock{key, size, begin, address_of(call->context), TripleId::kNone, Epoch{}, kind, domain,
                                    static_cast<int16_t>(device), false},
                        driver_frames);
}

void record_alloc(const CUpti_CallbackData* call, Domain domain, uint64_t address, uint64_t size) {
  if (!succeeded(call) || address == 0) return;
  record_block(call, DeviceKey::kDriverAddress, domain, address, size, address, device_of(call->context));
}

void record_free(const CUpti_CallbackData* call, uint64_t address) {
  if (call->callbackSite == CUPTI_API_ENTER && address != 0) recorder_device_free(DeviceKey::kDriverAddress, address);
}

// The VMM steps (driver_calls.inc, LS_DRIVER_VMM).
void vmm_create(const CUpti_CallbackData* call) {
  auto* p = static_cast<const cuMemCreate_params*>(call->functionParams);
  if (!succeeded(call) || p->prop == nullptr) return;
  const CUmemLocation& location = p->prop->location;
  bool on_device = location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  int device = on_device ? location.id : device_of(call->context);
  record_block(call, DeviceKey::kDriverHandle, on_device ? Domain::kCuda : Domain::kCudaHost, *p->handle, p->size, 0, device);
}

void vmm_release(const CUpti_CallbackData* call) {
  auto* p = static_cast<const cuMemRelease_params*>(call->functionParams);
  if (call->callbackSite == CUPTI_API_ENTER) recorder_device_release(p->handle);
}

void vmm_map(const CUpti_CallbackData* call) {
  auto* p = static_cast<const cuMemMap_params*>(call->functionParams);
  if (succeeded(call) && p->ptr >= p->offset) device_table_map(p->handle, p->ptr - p->offset);
}

void vmm_unmap(const CUpti_CallbackData* call) {
  auto* p = static_cast<const cuMemUnmap_params*>(call->functionParams);
  if (call->callbackSite == CUPTI_API_ENTER) recorder_device_unmap(p->ptr, p->size);
}

void vmm_reserve(const CUpti_CallbackData* call) {
  auto* p = static_cast<const cuMemAddressReserve_params*>(call->functionParams);
  if (succeeded(call) && *p->ptr != 0) {
    record_block(call, DeviceKey::kReservedRange, Domain::kCuda, *p->ptr, p->size, *p->ptr, device_of(call->context));
  }
}

void vmm_unreserve(const CUpti_CallbackData* call) {
  auto* p = static_cast<const cuMemAddressFree_params*>(call->functionParams);
  if (call->callbackSite == CUPTI_API_ENTER) recorder_device_free(DeviceKey::kReservedRange, p->ptr);
}

void on_driver_call(CUpti_CallbackId id, const CUpti_CallbackData* call) {
  switch (id) {
#define LS_DRIVER_ALLOC(name, domain, address, size)                                 \
  case CUPTI_DRIVER_TRACE_CBID_##name: {                                             \
    auto* p = static_cast<const name##_params*>(call->functionParams);               \
    if (succeeded(call)) record_alloc(call, Domain::k##domain, (address), (size));   \
    break;                                                                           \
  }
#define LS_DRIVER_FREE(name, address)                                                \
  case CUPTI_DRIVER_TRACE_CBID_##name: {                                             \
    auto* p = static_cast<const name##_params*>(call->functionParams);               \
    record_free(call, (address));                                                    \
    break;                                                                           \
  }
#define LS_DRIVER_VMM(name, step, doc) \
  case CUPTI_DRIVER_TRACE_CBID_##name: \
    step(call);                        \
    break;
#include "cuda/driver_calls.inc"
#undef LS_DRIVER_ALLOC
#undef LS_DRIVER_FREE
#undef LS_DRIVER_VMM
    default:
      break;
  }
}

constexpr CUpti_CallbackId kDriverCallbackIds[] = {
#define LS_DRIVER_ALLOC(name, domain, address, size) CUPTI_DRIVER_TRACE_CBID_##name,
#define LS_DRIVER_FREE(name, address) CUPTI_DRIVER_TRACE_CBID_##name,
#define LS_DRIVER_VMM(name, step, doc) CUPTI_DRIVER_TRACE_CBID_##name,
#include "cuda/driver_calls.inc"
#undef LS_DRIVER_ALLOC
#undef LS_DRIVER_FREE
#undef LS_DRIVER_VMM
};

}  // namespace

void CUPTIAPI driver_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  // A driver call leakscope makes itself, or one made while tracking is off, is not the program's.
  if (data == nullptr || !hook_should_record()) return;
  Bookkeeping record;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    auto* call = static_cast<const CUpti_CallbackData*>(data);
    on_driver_call(id, call);
    // What the driver says is used, on the device whose context is current here (the only one
    // cuMemGetInfo speaks of), after the call took effect.
    if (call->callbackSite == CUPTI_API_EXIT) device_memory_note(device_of(call->context), stream_ordered(id));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    auto* resource = static_cast<const CUpti_ResourceData*>(data);
    recorder_device_free_context(address_of(resource->context));
  }
}

const CUpti_CallbackId* driver_callback_ids(size_t* count) {
  *count = sizeof(kDriverCallbackIds) / sizeof(kDriverCallbackIds[0]);
  return kDriverCallbackIds;
}

void driver_callbacks_set_device_lookup(DeviceIdFunction lookup) { g_device_lookup.store(lookup, std::memory_order_release); }

}  // namespace leakscope::internal
