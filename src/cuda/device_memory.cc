#include "cuda/device_memory.h"

#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "core/accelerator.h"
#include "core/sys.h"

namespace leakscope::internal {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceReading {
  std::atomic<uint64_t> read_ns;  // when it was last read (monotonic); 0: never
  std::atomic<uint64_t> used_bytes;
  std::atomic<uint64_t> total_bytes;
};

std::atomic<MemoryInfoFunction> g_reader{nullptr};
DeviceReading g_readings[kMaxDevices];

}  // namespace

void device_memory_set_reader(MemoryInfoFunction reader) { g_reader.store(reader, std::memory_order_release); }

constexpr uint64_t kFrequentCallGapNs = 1000000;

void device_memory_note(int device, bool frequent) {
  MemoryInfoFunction reader = g_reader.load(std::memory_order_acquire);
  if (reader == nullptr || device < 0 || device >= kMaxDevices) return;
  DeviceReading& reading = g_readings[device];
  uint64_t now = sys::monotonic_ns();
  if (frequent && now - reading.read_ns.load(std::memory_order_relaxed) < kFrequentCallGapNs) return;
  reading.read_ns.store(now, std::memory_order_relaxed);
  size_t free_bytes = 0, total_bytes = 0;
  if (reader(&free_bytes, &total_bytes) != 0 || total_bytes < free_bytes) return;  // 0 is CUDA_SUCCESS
  reading.used_bytes.store(total_bytes - free_bytes, std::memory_order_relaxed);
  reading.total_bytes.store(total_bytes, std::memory_order_release);
}

bool accelerator_device_memory(int device, DeviceMemoryInfo* info) {
  if (device < 0 || device >= kMaxDevices) return false;
  const DeviceReading& reading = g_readings[device];
  info->total_bytes = reading.total_bytes.load(std::memory_order_acquire);
  info->used_bytes = reading.used_bytes.load(std::memory_order_relaxed);
  return info->total_bytes != 0;
}

}  // namespace leakscope::internal
