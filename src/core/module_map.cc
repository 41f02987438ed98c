#include "core/module_map.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

#include <atomic>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"
#include "core/sys.h"

namespace leakscope::internal {
namespace {

// The modules seen by one walk of the loader's list, copied out while the loader held it: their
// records, and their paths one after another (a path's pointer is set once the walk is done, as
// the buffer may move while it grows). Two arrays, not one allocation per module: a walk runs at
// every dlopen, and a process that imports torch has hundreds of modules.
struct Walk {
  InternalArray<ModuleRecord> seen;
  InternalArray<uint32_t> path_offsets;
  InternalArray<char> paths;
  uint64_t generation;  // dlpi_adds + dlpi_subs at the walk
  uint64_t skip_if_generation;
  bool first;
  bool out_of_memory;
};

SpinLock g_lock;
constinit InternalArray<ModuleRecord*> g_modules;
uint64_t g_merged_generation = 0;
std::atomic<uint64_t> g_known_generation{~0ull};

void read_build_id(const struct dl_phdr_info* info, ModuleRecord* record) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_NOTE) continue;
    const char* cursor = reinterpret_cast<const char*>(info->dlpi_addr + header.p_vaddr);
    const char* end = cursor + header.p_memsz;
    while (cursor + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(cursor);
      const char* name = cursor + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          note->n_descsz <= kMaxBuildIdLength && desc + note->n_descsz <= end) {
        record->build_id_length = note->n_descsz;
        memcpy(record->build_id, desc, note->n_descsz);
        return;
      }
      cursor = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
}

int collect(struct dl_phdr_info* info, size_t size, void* data) {
  auto* walk = static_cast<Walk*>(data);
  if (walk->first) {
    walk->first = false;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
      walk->generation = info->dlpi_adds + info->dlpi_subs;
      if (walk->generation == walk->skip_if_generation) return 1;
    }
  }
  char path[4096];
  const char* name = info->dlpi_name;
  size_t length = 0;
  if (name == nullptr || name[0] == '\0') {
    // The main program has no name in the loader's list.
    long read = sys::read_link("/proc/self/exe", path, sizeof(path));
    length = read > 0 ? static_cast<size_t>(read) : 0;
  } else {
    // A library dlopen'd by a relative path keeps it as its name; the symbolizer needs where it
    // is, which the working directory says now. A name without a slash is no file (the vdso).
    if (name[0] != '/' && strchr(name, '/') != nullptr) {
      long cwd = sys::current_directory(path, sizeof(path) - 2);
      if (cwd > 0 && path[cwd - 1] != '/') path[cwd++] = '/';
      length = cwd > 0 ? static_cast<size_t>(cwd) : 0;
    }
    size_t name_length = strnlen(name, sizeof(path) - 1 - length);
    memcpy(path + length, name, name_length);
    length += name_length;
  }
  size_t offset = walk->paths.size();
  ModuleRecord record{};
  if (!walk->paths.resize(offset + length + 1) || !walk->path_offsets.push_back(static_cast<uint32_t>(offset))) {
    walk->out_of_memory = true;
    return 1;
  }
  memcpy(&walk->paths[offset], path, length);
  record.path_length = static_cast<uint32_t>(length);
  record.base = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum && record.segment_count < kMaxModuleSegments; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD) continue;
    record.segments[record.segment_count++] = {header.p_vaddr, header.p_memsz, header.p_offset, header.p_flags};
  }
  read_build_id(info, &record);
  if (!walk->seen.push_back(record)) {
    walk->out_of_memory = true;
    return 1;
  }
  return 0;
}

bool same_module(const ModuleRecord& known, const ModuleRecord& seen) {
  return known.base == seen.base && known.path_length == seen.path_length &&
         memcmp(known.path, seen.path, known.path_length) == 0 && known.build_id_length == seen.build_id_length &&
         memcmp(known.build_id, seen.build_id, known.build_id_length) == 0;
}

void merge(Walk& walk, Epoch now) {
  uint64_t now_ns = sys::monotonic_ns();
  SpinLockGuard guard(g_lock);
  if (walk.generation < g_merged_generation) return;  // a newer walk already merged
  g_merged_generation = walk.generation;
  uint32_t known_count = static_cast<uint32_t>(g_modules.size());
  for (uint32_t k = 0; k < known_count; ++k) {
    ModuleRecord* known = g_modules[k];
    if (known->unloaded) continue;
    bool present = false;
    for (size_t s = 0; s < walk.seen.size() && !present; ++s) present = same_module(*known, walk.seen[s]);
    if (!present) {
      known->unloaded = true;
      known->unload_ns = now_ns;
      known->unload_epoch = now;
    }
  }
  for (size_t s = 0; s < walk.seen.size(); ++s) {
    const ModuleRecord& seen = walk.seen[s];
    bool known_already = false;
    for (uint32_t k = 0; k < known_count && !known_already; ++k) {
      known_already = !g_modules[k]->unloaded && same_module(*g_modules[k], seen);
    }
    if (known_already) continue;
    auto* record = static_cast<ModuleRecord*>(internal_alloc(sizeof(ModuleRecord)));
    auto* path = static_cast<char*>(internal_alloc(seen.path_length + 1));
    if (record == nullptr || path == nullptr) return;
    memcpy(path, seen.path, seen.path_length + 1);
    *record = seen;
    record->id = static_cast<uint32_t>(g_modules.size());
    record->path = path;
    record->load_ns = now_ns;
    record->load_epoch = now;
    if (!g_modules.push_back(record)) return;
  }
}

}  // namespace

void module_map_refresh(Epoch now, bool force) {
  Walk walk{};
  walk.first = true;
  walk.skip_if_generation = force ? ~0ull : g_known_generation.load(std::memory_order_relaxed);
  dl_iterate_phdr(collect, &walk);
  if (!walk.out_of_memory && (walk.generation != walk.skip_if_generation || force)) {
    for (size_t s = 0; s < walk.seen.size(); ++s) walk.seen[s].path = &walk.paths[walk.path_offsets[s]];
    merge(walk, now);
    g_known_generation.store(walk.generation, std::memory_order_relaxed);
  }
  walk.seen.release();
  walk.path_offsets.release();
  walk.paths.release();
}

uint32_t module_map_count() { return static_cast<uint32_t>(g_modules.size()); }
const ModuleRecord* module_map_get(uint32_t id) { return id < g_modules.size() ? g_modules[id] : nullptr; }
void module_map_lock() { g_lock.lock(); }
void module_map_unlock() { g_lock.unlock(); }

void module_map_before_fork() { g_lock.lock(); }
void module_map_after_fork_parent() { g_lock.unlock(); }
void module_map_after_fork_child() { g_lock.reset_after_fork(); }

}  // namespace leakscope::internal
