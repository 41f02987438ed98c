#include <dlfcn.h>
#include <link.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "core/stack_capture.h"
#include "core/types.h"

__thread uintptr_t leakscope_tls_hook_caller __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;

namespace leakscope::internal {
namespace {

// libleakscope's executable segment; frames inside it are the hook and the recorder.
uintptr_t g_own_code_begin = 0;
uintptr_t g_own_code_end = 0;

OptionUnwind g_mode = OptionUnwind::kLibunwind;


int find_own_code(struct dl_phdr_info* info, size_t, void* data) {
  uintptr_t probe = reinterpret_cast<uintptr_t>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
    uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    uintptr_t end = begin + header.p_memsz;
    if (probe >= begin && probe < end) {
      g_own_code_begin = begin;
      g_own_code_end = end;
      return 1;
    }
  }
  return 0;
}

}  // namespace

void stack_capture_init(OptionUnwind mode) {
  g_mode = mode;
  dl_iterate_phdr(find_own_code, reinterpret_cast<void*>(&stack_capture_libunwind));
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

bool stack_capture_is_own_code(uintptr_t address) {
  return address >= g_own_code_begin && address < g_own_code_end;
}

int stack_capture(ThreadState* thread, uintptr_t* frames, int max_depth) {
  if (max_depth == 1 && leakscope_tls_hook_caller != 0) {
    frames[0] = leakscope_tls_hook_caller;
    return 1;
  }
  if (g_mode == OptionUnwind::kFramePointer) {
    int depth = stack_capture_frame_pointers(thread, frames, max_depth);
    if (depth > 0) return depth;
  }
  return stack_capture_libunwind(frames, max_depth);
}

int stack_capture_libunwind(uintptr_t* frames, int max_depth) {
  void* raw_frames[kMaxStackDepth + kOwnFrameAllowance];
  int wanted = max_depth + kOwnFrameAllowance;
  int captured = unw_backtrace(raw_frames, wanted);
  int first = 0;
  while (first < captured && stack_capture_is_own_code(reinterpret_cast<uintptr_t>(raw_frames[first]))) {
    ++first;
  }
  int depth = captured - first;
  if (depth > max_depth) depth = max_depth;
  for (int i = 0; i < depth; ++i) frames[i] = reinterpret_cast<uintptr_t>(raw_frames[first + i]);
  return depth;
}

}  // namespace leakscope::internal
