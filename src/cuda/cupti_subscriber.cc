#include "cuda/cupti_subscriber.h"

#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include <atomic>

#include "core/runtime.h"
#include "cuda/device_memory.h"
#include "cuda/driver_callbacks.h"
#include "cuda/driver_frames.h"

namespace leakscope::internal {
namespace {

using SubscribeV2 = decltype(&cuptiSubscribe_v2);
using Subscribe = decltype(&cuptiSubscribe);
using EnableCallback = decltype(&cuptiEnableCallback);
using ResultString = decltype(&cuptiGetResultString);
using DriverVersion = int (*)(int*);

enum SubscriptionState : int { kUntried = 0, kTrying = 1, kSubscribed = 2, kNotSubscribed = 3 };
std::atomic<int> g_state{kUntried};
std::atomic<DeviceTracking> g_outcome{DeviceTracking::kWaiting};
CUpti_SubscriberHandle g_subscriber = nullptr;

void say(const char* what) {
  char line[1024];
  snprintf(line, sizeof(line), "CUDA device memory is not tracked: %s; host and c10 tracking go on", what);
  runtime_note(line);
}

void* open_library(const char* path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }

// A CUDA library loaded from a wheel sits in site-packages/nvidia/<package>/lib/, and the wheel's
// libcupti in site-packages/nvidia/cuda_cupti/lib/.
struct WheelSearch {
  void* handle;
};

int search_wheel(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<WheelSearch*>(data);
  const char* name = info->dlpi_name;
  const char* nvidia = name != nullptr ? strstr(name, "/nvidia/") : nullptr;
  if (nvidia == nullptr) return 0;
  static constexpr const char* kNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8", "libcupti.so"};
  for (const char* library : kNames) {
    char path[4096];
    int written = snprintf(path, sizeof(path), "%.*scuda_cupti/lib/%s", static_cast<int>(nvidia - name + 8), name, library);
    if (written <= 0 || static_cast<size_t>(written) >= sizeof(path)) continue;
    search->handle = open_library(path);
    if (search->handle != nullptr) return 1;
  }
  return 0;
}

void* driver_library() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return driver != nullptr ? driver : RTLD_DEFAULT;
}

void* load_cupti(const char* option) {
  if (strcmp(option, "auto") != 0) {
    void* handle = open_library(option);
    if (handle == nullptr) {
      char why[4096 + 512];
      const char* error = dlerror();
      snprintf(why, sizeof(why), "cannot load libcupti from the cupti option (%s)", error != nullptr ? error : option);
      say(why);
    }
    return handle;
  }
  WheelSearch wheel{nullptr};
  dl_iterate_phdr(search_wheel, &wheel);
  if (wheel.handle != nullptr) return wheel.handle;
  int version = 0;
  auto driver_version = reinterpret_cast<DriverVersion>(dlsym(driver_library(), "cuDriverGetVersion"));
  if (driver_version != nullptr && driver_version(&version) == 0 && version >= 1000) {
    char name[32];
    snprintf(name, sizeof(name), "libcupti.so.%d", version / 1000);
    if (void* handle = open_library(name)) return handle;
  }
  for (const char* path : {"libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "/usr/local/cuda/lib64/libcupti.so"}) {
    if (void* handle = open_library(path)) return handle;
  }
  say("no libcupti found (name one with the cupti option)");
  return nullptr;
}

bool subscribe_with(void* cupti) {
  auto subscribe_v2 = reinterpret_cast<SubscribeV2>(dlsym(cupti, "cuptiSubscribe_v2"));
  auto subscribe = reinterpret_cast<Subscribe>(dlsym(cupti, "cuptiSubscribe"));
  auto enable = reinterpret_cast<EnableCallback>(dlsym(cupti, "cuptiEnableCallback"));
  auto result_string = reinterpret_cast<ResultString>(dlsym(cupti, "cuptiGetResultString"));
  if ((subscribe_v2 == nullptr && subscribe == nullptr) || enable == nullptr) {
    say("the libcupti loaded has no cuptiSubscribe or cuptiEnableCallback");
    g_outcome.store(DeviceTracking::kNoCupti, std::memory_order_release);
    return false;
  }
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = {};
  CUptiResult result;
  if (subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params = {};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "leakscope";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder) - 1;
    result = subscribe_v2(&g_subscriber, driver_callback, nullptr, &params);
  } else {
    result = subscribe(&g_subscriber, driver_callback, nullptr);
  }
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    char why[sizeof(holder) + 160];
    snprintf(why, sizeof(why), "CUPTI allows one subscriber and %s holds it (a profiler such as Nsight or torch.profiler)",
             holder[0] != '\0' ? holder : "another tool");
    say(why);
    g_outcome.store(DeviceTracking::kCuptiHeld, std::memory_order_release);
    return false;
  }
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    if (result_string == nullptr || result_string(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
    char why[256];
    snprintf(why, sizeof(why), "cuptiSubscribe failed: %s", text);
    say(why);
    g_outcome.store(DeviceTracking::kCuptiFailed, std::memory_order_release);
    return false;
  }
  driver_frames_find();
  size_t count = 0;
  const CUpti_CallbackId* ids = driver_callback_ids(&count);
  for (size_t i = 0; i < count; ++i) enable(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
  enable(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  driver_callbacks_set_device_lookup(reinterpret_cast<DeviceIdFunction>(dlsym(cupti, "cuptiGetDeviceId")));
  device_memory_set_reader(reinterpret_cast<MemoryInfoFunction>(dlsym(driver_library(), "cuMemGetInfo_v2")));
  return true;
}

}  // namespace

DeviceTracking cupti_outcome() { return g_outcome.load(std::memory_order_acquire); }

bool cupti_subscribe() {
  int state = kUntried;
  // One thread tries; one that comes meanwhile is not subscribed yet and goes on.
  if (!g_state.compare_exchange_strong(state, kTrying, std::memory_order_acq_rel)) return state == kSubscribed;
  void* cupti = load_cupti(runtime_options().cupti.text);
  if (cupti == nullptr) g_outcome.store(DeviceTracking::kNoCupti, std::memory_order_release);
  bool subscribed = cupti != nullptr && subscribe_with(cupti);
  if (subscribed) g_outcome.store(DeviceTracking::kTracking, std::memory_order_release);
  g_state.store(subscribed ? kSubscribed : kNotSubscribed, std::memory_order_release);
  return subscribed;
}

}  // namespace leakscope::internal
