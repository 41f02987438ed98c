#include "interpose/real_functions.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <atomic>

namespace leakscope::internal {

RealFunctions g_real;

namespace {
constinit std::atomic<uint32_t> g_libraries_loaded{0};
}  // namespace

uint32_t real_functions_libraries_loaded() { return g_libraries_loaded.load(std::memory_order_acquire); }

void real_functions_count_library_load() { g_libraries_loaded.fetch_add(1, std::memory_order_acq_rel); }

namespace {

enum Need { kRequired, kOptional };

constexpr size_t kBootstrapPoolSize = 64 * 1024;
constexpr size_t kBootstrapHeader = 16;  // holds the block's size, keeps 16-byte alignment

alignas(64) char g_bootstrap_pool[kBootstrapPoolSize];
std::atomic<size_t> g_bootstrap_used{0};

}  // namespace

bool real_functions_resolve(char* error, size_t size) {
#define LS_HOOK(name, ret, params, args, domain, need, nothrow)                                  \
  g_real.name = reinterpret_cast<decltype(g_real.name)>(dlsym(RTLD_NEXT, #name));                \
  if (g_real.name == nullptr && need == kRequired) {                                             \
    snprintf(error, size, "cannot find the real '%s' (dlsym(RTLD_NEXT) returned nothing)", #name); \
    return false;                                                                                \
  }
#define LS_HOOK_MANUAL LS_HOOK
#include "interpose/hooks.inc"
#undef LS_HOOK_MANUAL
#undef LS_HOOK
  return true;
}

void* bootstrap_alloc(size_t size, size_t alignment) {
  if (alignment < kBootstrapHeader) alignment = kBootstrapHeader;
  for (;;) {
    size_t used = g_bootstrap_used.load(std::memory_order_relaxed);
    size_t start = (used + kBootstrapHeader + alignment - 1) & ~(alignment - 1);
    size_t end = start + size;
    if (end > kBootstrapPoolSize || end < start) return nullptr;
    if (g_bootstrap_used.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      memcpy(g_bootstrap_pool + start - sizeof(size_t), &size, sizeof(size_t));
      return g_bootstrap_pool + start;
    }
  }
}

bool bootstrap_owns(const void* pointer) {
  const char* address = static_cast<const char*>(pointer);
  return address >= g_bootstrap_pool && address < g_bootstrap_pool + kBootstrapPoolSize;
}

size_t bootstrap_size(const void* pointer) {
  size_t size;
  memcpy(&size, static_cast<const char*>(pointer) - sizeof(size_t), sizeof(size_t));
  return size;
}

}  // namespace leakscope::internal
