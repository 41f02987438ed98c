#include "core/proc_stats.h"

#include <string.h>

#include "core/sys.h"

namespace leakscope::internal {

uint64_t proc_stats_field_bytes(const char* text, const char* name) {
  size_t name_length = strlen(name);
  for (const char* line = text; line != nullptr && *line != '\0';) {
    if (strncmp(line, name, name_length) == 0 && line[name_length] == ':') {
      const char* cursor = line + name_length + 1;
      while (*cursor == ' ' || *cursor == '\t') ++cursor;
      uint64_t kib = 0;
      while (*cursor >= '0' && *cursor <= '9') kib = kib * 10 + static_cast<uint64_t>(*cursor++ - '0');
      return kib * 1024;
    }
    line = strchr(line, '\n');
    if (line != nullptr) ++line;
  }
  return 0;
}

namespace {

constexpr uint64_t kPssDutyFactor = 50;  // PSS is read again after 50 times its last read's time

uint64_t g_last_pss = 0;
uint64_t g_pss_due_ns = 0;  // monotonic time from which PSS is read again

}  // namespace

void proc_stats_read(ProcStats* stats, bool fresh) {
  *stats = ProcStats{};
  char text[4096];
  // thread-self, not self: once the main thread has ended by pthread_exit(), /proc/self is that
  // zombie's, and tells no memory.
  if (sys::read_small_file("/proc/thread-self/status", text, sizeof(text)) > 0) {
    stats->rss_bytes = proc_stats_field_bytes(text, "VmRSS");
    stats->anon_bytes = proc_stats_field_bytes(text, "RssAnon");
    stats->file_bytes = proc_stats_field_bytes(text, "RssFile");
    stats->shmem_bytes = proc_stats_field_bytes(text, "RssShmem");
    stats->swap_bytes = proc_stats_field_bytes(text, "VmSwap");
    stats->hwm_bytes = proc_stats_field_bytes(text, "VmHWM");
  }
  uint64_t start = sys::monotonic_ns();
  if ((fresh || start >= g_pss_due_ns) && sys::read_small_file("/proc/thread-self/smaps_rollup", text, sizeof(text)) > 0) {
    g_last_pss = proc_stats_field_bytes(text, "Pss");
    uint64_t end = sys::monotonic_ns();
    g_pss_due_ns = end + kPssDutyFactor * (end - start);
  }
  stats->pss_bytes = g_last_pss;
}

}  // namespace leakscope::internal
