// CPython as the interpreter of core/interpreter.h: finds `_PyRuntime` in the process and watches
// the word that turns non-zero when Py_FinalizeEx begins tearing the interpreter down (after the
// program's atexit callbacks, before modules and their globals are freed). Debian's python3.11
// links libpython into the executable, so Py_FinalizeEx's calls cannot be interposed there; the
// word works the same in a static and a shared libpython.
//
// Offsets of _PyRuntime._finalizing, taken from each version's headers (pycore_runtime.h); 3.13
// publishes them in _Py_DebugOffsets at the start of _PyRuntime, which is read instead when its
// cookie is there. An unknown version is left unwatched: the mark then comes from exit() or the
// return from main, after finalization.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

#include "core/environment.h"
#include "core/interpreter.h"
#include "core/runtime.h"
#include "core/sys.h"
#include "interpose/python_allocator_hooks.h"
#include "python/python_frames.h"
#include "python/python_free_lists.h"
#include "python/python_object_reuse.h"

namespace leakscope::internal {
namespace {

constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
constexpr size_t kDebugFinalizingWord = 4;  // cookie, version, free_threaded, runtime_state.size, .finalizing

std::atomic<bool> g_found{false};

// python_minor_version() is X of the running CPython 3.X, or -1.
int python_minor_version(void* scope) {
  if (auto* hex = static_cast<const unsigned long*>(dlsym(scope, "Py_Version"))) {  // 3.11+
    return (*hex >> 24) == 3 ? static_cast<int>((*hex >> 16) & 0xff) : -1;
  }
  // 3.10: Py_GetVersion() formats a static buffer; it allocates nothing and runs no Python.
  auto get_version = reinterpret_cast<const char* (*)()>(dlsym(scope, "Py_GetVersion"));
  const char* text = get_version != nullptr ? get_version() : nullptr;
  if (text == nullptr || strncmp(text, "3.", 2) != 0) return -1;
  return static_cast<int>(strtol(text + 2, nullptr, 10));
}

// finalizing_offset() is where _PyRuntime._finalizing lies, or 0 when this build is not known.
size_t finalizing_offset(const uint8_t* runtime, int minor) {
  if (memcmp(runtime, kDebugCookie, sizeof(kDebugCookie)) == 0) {
    uint64_t offset;
    memcpy(&offset, runtime + 8 * kDebugFinalizingWord, sizeof(offset));
    return offset < (1u << 20) ? static_cast<size_t>(offset) : 0;
  }
  switch (minor) {
    case 10: return 16;
    case 11:
    case 12: return 24;
    default: return 0;
  }
}

// python_directory() finds leakscope's Python directory beside the preload: installed, or in the
// build tree; false when there is none.
bool python_directory(char* out, size_t size) {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&interpreter_attach), &self) == 0 || self.dli_fname == nullptr) return false;
  const char* slash = strrchr(self.dli_fname, '/');
  if (slash == nullptr) return false;
  int directory_length = static_cast<int>(slash - self.dli_fname);
  for (const char* relative : {LEAKSCOPE_PYTHON_FROM_LIBDIR, "../share/leakscope/python"}) {
    int written = snprintf(out, size, "%.*s/%s", directory_length, self.dli_fname, relative);
    if (written > 0 && static_cast<size_t>(written) < size && access(out, R_OK | X_OK) == 0) return true;
  }
  return false;
}

// put_on_python_path() puts `directory` first on PYTHONPATH, once.
void put_on_python_path(const char* directory) {
  const char* existing = getenv("PYTHONPATH");
  size_t length = strlen(directory);
  if (existing != nullptr && strncmp(existing, directory, length) == 0 && (existing[length] == '\0' || existing[length] == ':')) {
    return;  // an exec'd Python inherits it
  }
  char path[8192];
  int written = existing != nullptr && existing[0] != '\0' ? snprintf(path, sizeof(path), "%s:%s", directory, existing)
                                                          : snprintf(path, sizeof(path), "%s", directory);
  if (written > 0 && static_cast<size_t>(written) < sizeof(path)) environment_set("PYTHONPATH", path, true);
}

// dev_mode_asked() tells whether the interpreter will run in its development mode (PYTHONDEVMODE,
// or -X dev among its options before the script, -c or -m), which puts its debug allocator in place
// of any set before it initializes.
bool dev_mode_asked() {
  const char* variable = getenv("PYTHONDEVMODE");
  if (variable != nullptr && variable[0] != '\0') return true;
  char text[8192];
  long length = sys::read_small_file("/proc/self/cmdline", text, sizeof(text));
  if (length <= 0) return false;
  const char* end = text + length;
  const char* option_with_value = nullptr;  // the option the next argument is the value of
  for (const char* argument = text + strlen(text) + 1; argument < end; argument += strlen(argument) + 1) {
    if (option_with_value != nullptr) {
      if (strcmp(option_with_value, "-X") == 0 && strcmp(argument, "dev") == 0) return true;
      option_with_value = nullptr;
      continue;
    }
    // The options end at the script, -c, -m, "-" (standard input) or "--".
    if (argument[0] != '-' || strcmp(argument, "-") == 0 || strcmp(argument, "--") == 0 ||
        strncmp(argument, "-c", 2) == 0 || strncmp(argument, "-m", 2) == 0) {
      return false;
    }
    if (strcmp(argument, "-Xdev") == 0) return true;
    for (const char* takes_value : {"-X", "-W", "--check-hash-based-pycs"}) {
      if (strcmp(argument, takes_value) == 0) option_with_value = takes_value;
    }
  }
  return false;
}

// record_small_objects() sees that objects of 512 bytes or less are recorded one by one: unseen,
// pymalloc carves them out of its arenas, and a leak of them would show as arena growth wherever
// an arena happened to be opened. 3.10-3.13 keep allocators set before they initialize, so
// pymalloc stays and each object is recorded through it; older ones reset theirs as they start and
// are asked for PYTHONMALLOC=malloc, read after the library constructors. An allocator the user
// chose (PYTHONMALLOC, development mode's debug one) is kept, and what it leaves unrecorded said.
void record_small_objects(void* scope, int minor) {
  const char* chosen = getenv("PYTHONMALLOC");
  if (chosen != nullptr && chosen[0] != '\0') {
    // Objects from glibc's malloc are recorded one by one, and the interpreter's free lists still
    // keep tuples.
    if (strncmp(chosen, "malloc", 6) == 0 && minor >= 10 && minor <= 13) python_free_lists_watch(scope);
    if (strncmp(chosen, "malloc", 6) != 0) {
      python_arena_hooks_install(scope);
      char line[256];
      snprintf(line, sizeof(line),
               "PYTHONMALLOC=%.40s: Python objects of 512 bytes or less are not recorded one by one, only the arenas "
               "they are carved from; unset it to record them",
               chosen);
      runtime_note(line);
    }
    return;
  }
  if (dev_mode_asked()) {
    python_arena_hooks_install(scope);
    runtime_note("Python's development mode puts its debug allocator in place: objects of 512 bytes or less are not "
                 "recorded one by one, only the arenas they are carved from (PYTHONMALLOC=malloc records them, "
                 "without the debug checks)");
    return;
  }
  if (minor >= 10 && minor <= 13 && python_allocator_hooks_install(scope)) {
    // Its arenas' ranges are what lets their blocks be recorded through the queue
    // (deferred_records.h); they are mapped inside a recorded call, never recorded as mmap.
    python_arena_hooks_install(scope);
    python_free_lists_watch(scope);
    if (minor >= 13) python_object_reuse_watch(scope);
    return;
  }
  environment_set("PYTHONMALLOC", "malloc", false);
}

bool attach_in(void* scope, bool at_start) {
  auto* runtime = static_cast<const uint8_t*>(dlsym(scope, "_PyRuntime"));
  if (runtime == nullptr) return false;
  g_found.store(true, std::memory_order_release);
  int minor = python_minor_version(scope);
  size_t offset = finalizing_offset(runtime, minor);
  if (offset != 0) g_teardown_word.store(reinterpret_cast<const uint64_t*>(runtime + offset), std::memory_order_release);
  const Options& options = runtime_options();
  if (options.python_frames && !python_frames_attach(scope, minor, runtime)) {
    char line[160];
    snprintf(line, sizeof(line), "Python frames are off: CPython 3.%d is not one leakscope can read; stacks stay native",
             minor);
    runtime_note(line);
  }
  // Sampled mode, which is for production, leaves pymalloc unrecorded (docs/PYTHON.md): its arenas
  // are recorded instead, at their own marker.
  if (at_start && options.python_malloc && options.sample == 0) {
    record_small_objects(scope, minor);
  } else if (at_start) {
    python_arena_hooks_install(scope);
  }
  char directory[4096];
  if (at_start && options.python_threads && python_directory(directory, sizeof(directory))) put_on_python_path(directory);
  return true;
}

}  // namespace

bool interpreter_found() { return g_found.load(std::memory_order_acquire); }

void interpreter_attach(void* handle) {
  if (g_found.load(std::memory_order_acquire)) return;
  if (!attach_in(RTLD_DEFAULT, handle == nullptr) && handle != nullptr) attach_in(handle, false);
}

}  // namespace leakscope::internal
