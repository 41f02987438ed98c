// File: module_map.h
//
// The module map: every object loaded in the process (path, build-id, load address, loadable
// segments) with the time and epoch it was loaded and unloaded. It is written into the stream so
// that the CLI symbolizes offline, after dlclose, and on another machine holding the same files.
// Kept current by the dlopen/dlclose hooks and by each snapshot (which also catches objects that
// libc loads itself), using the loader's add/remove counters to skip unchanged maps cheaply.
#ifndef LEAKSCOPE_CORE_MODULE_MAP_H_
#define LEAKSCOPE_CORE_MODULE_MAP_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

constexpr int kMaxModuleSegments = 16;
constexpr int kMaxBuildIdLength = 64;

struct ModuleSegment {
  uint64_t vaddr;
  uint64_t memsz;
  uint64_t file_offset;
  uint32_t flags;  // PF_R | PF_W | PF_X
};

struct ModuleRecord {
  uint32_t id;  // index in load order, from 0
  uintptr_t base;
  const char* path;
  uint32_t path_length;
  uint32_t build_id_length;
  uint8_t build_id[kMaxBuildIdLength];
  uint32_t segment_count;
  ModuleSegment segments[kMaxModuleSegments];
  uint64_t load_ns;  // monotonic
  Epoch load_epoch;
  bool unloaded;
  uint64_t unload_ns;
  Epoch unload_epoch;
};

// module_map_refresh() reconciles the map with the loader's list. Unless `force`, it returns at
// once when nothing was loaded or unloaded since the last call. Thread-safe; not signal-safe.
void module_map_refresh(Epoch now, bool force);

// module_map_count() and module_map_get() read the records (ids 0..count-1) for the writer, which
// holds module_map_lock() while it reads.
uint32_t module_map_count();
const ModuleRecord* module_map_get(uint32_t id);
void module_map_lock();
void module_map_unlock();

void module_map_before_fork();
void module_map_after_fork_parent();
void module_map_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_MODULE_MAP_H_
