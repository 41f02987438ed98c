/* libleakscope_api.so: the no-op answers of the leakscope C API for programs that run without
 * the preload. Under LD_PRELOAD=libleakscope.so the preload's definitions come first in symbol
 * order, so these are never reached there. */
#include "leakscope/leakscope.h"

int leakscope_task_begin(const char* name, uint64_t id) {
  (void)name;
  (void)id;
  return -1;
}

int leakscope_task_end(void) { return -1; }

int leakscope_thread_name(const char* name) {
  (void)name;
  return -1;
}

int leakscope_snapshot_now(void) { return -1; }

int64_t leakscope_live_bytes(leakscope_domain_t domain) {
  return (int)domain >= 0 && (int)domain <= LEAKSCOPE_DOMAIN_C10_CUDA ? 0 : -1;
}

int leakscope_is_active(void) { return 0; }

const char* leakscope_stream_path(void) { return 0; }

int64_t leakscope_leak_check(void) { return -1; }

int leakscope_register_root_region(const void* begin, size_t size) {
  (void)begin;
  (void)size;
  return -1;
}

int leakscope_unregister_root_region(const void* begin, size_t size) {
  (void)begin;
  (void)size;
  return -1;
}
