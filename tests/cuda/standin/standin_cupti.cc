// A stand-in libcupti for the CUDA tests, on a machine without a GPU: the subscriber API leakscope
// uses (cuptiSubscribe_v2, cuptiSubscribe, cuptiEnableCallback, cuptiGetDeviceId,
// cuptiGetResultString), one subscriber at a time as the real one allows. When
// STANDIN_CUPTI_HOLDER names a tool, that tool holds the slot already and every subscription is
// refused with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, naming it, as under Nsight.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <set>
#include <utility>

#include "standin.h"

namespace {

CUpti_CallbackFunc g_callback = nullptr;
void* g_userdata = nullptr;
std::set<std::pair<int, unsigned>> g_enabled;
int g_subscriber_token = 1;

void dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (g_callback != nullptr && g_enabled.count({domain, id}) != 0) g_callback(g_userdata, domain, id, data);
}

CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                      CUpti_SubscriberParams* params) {
  const char* holder = getenv("STANDIN_CUPTI_HOLDER");
  if (g_callback != nullptr || (holder != nullptr && *holder != '\0')) {
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
      snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", holder != nullptr ? holder : "CUPTI");
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  // The driver must be in the process, as with the real CUPTI.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto set_dispatch = driver != nullptr ? reinterpret_cast<decltype(&standin_cuda_set_dispatch)>(dlsym(driver, "standin_cuda_set_dispatch")) : nullptr;
  if (set_dispatch == nullptr) return CUPTI_ERROR_UNKNOWN;
  g_callback = callback;
  g_userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_token);
  set_dispatch(dispatch);
  return CUPTI_SUCCESS;
}

}  // namespace

extern "C" {

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                              CUpti_SubscriberParams* params) {
  return subscribe(subscriber, callback, userdata, params);
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  return subscribe(subscriber, callback, userdata, nullptr);
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  g_callback = nullptr;
  g_enabled.clear();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  if (enable != 0) {
    g_enabled.insert({domain, id});
  } else {
    g_enabled.erase({domain, id});
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t* device) {
  if (context == nullptr) return CUPTI_ERROR_INVALID_CONTEXT;
  *device = static_cast<uint32_t>(reinterpret_cast<StandinContext*>(context)->device);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char** text) {
  *text = result == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_ERROR";
  return CUPTI_SUCCESS;
}

}  // extern "C"
