#include "cuda/driver_frames.h"

#include <link.h>
#include <string.h>

namespace leakscope::internal {
namespace {

constexpr int kMaxRanges = 16;

struct CodeRange {
  uintptr_t begin;
  uintptr_t end;
};

CodeRange g_ranges[kMaxRanges];
int g_range_count = 0;

bool is_driver_library(const char* path) {
  const char* name = strrchr(path, '/');
  name = name != nullptr ? name + 1 : path;
  return strncmp(name, "libcupti", 8) == 0 || strncmp(name, "libcuda.so", 10) == 0;
}

int note_code(struct dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name == nullptr || !is_driver_library(info->dlpi_name)) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_range_count < kMaxRanges; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    g_ranges[g_range_count++] = CodeRange{begin, begin + segment.p_memsz};
  }
  return 0;
}

bool in_driver(uintptr_t address) {
  for (int i = 0; i < g_range_count; ++i) {
    if (address >= g_ranges[i].begin && address < g_ranges[i].end) return true;
  }
  return false;
}

}  // namespace

void driver_frames_find() {
  g_range_count = 0;
  dl_iterate_phdr(note_code, nullptr);
}

int driver_frames(const uintptr_t* frames, int depth) {
  int inside = 0;
  while (inside < depth && in_driver(frames[inside])) ++inside;
  return inside;
}

}  // namespace leakscope::internal
