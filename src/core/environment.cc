#include "core/environment.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/options.h"

namespace leakscope::internal {
namespace {

// The runtime sets four variables at most (its lineage, LD_PRELOAD, PYTHONPATH, and PYTHONMALLOC
// for an interpreter whose pymalloc it cannot record); a setting stays in use for the life of the
// process, so its storage is never reused.
constexpr int kSettings = 8;
constexpr size_t kSettingSize = kMaxPathLength + 64;
char g_settings[kSettings][kSettingSize];
int g_settings_used = 0;

}  // namespace

bool environment_set(const char* name, const char* value, bool overwrite) {
  if (!overwrite && getenv(name) != nullptr) return true;
  if (g_settings_used == kSettings) return false;
  char* setting = g_settings[g_settings_used];
  int written = snprintf(setting, kSettingSize, "%s=%s", name, value);
  if (written < 0 || static_cast<size_t>(written) >= kSettingSize) return false;
  ++g_settings_used;
  return putenv(setting) == 0;
}

}  // namespace leakscope::internal
