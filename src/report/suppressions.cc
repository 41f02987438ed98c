#include "report/suppressions.h"

#include <fnmatch.h>

#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "core/stream_format.h"
#include "report/frame_roles.h"
#include "report/text_file.h"

namespace leakscope::report {
namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

bool is_loader(const std::string& base) {
  return starts_with(base, "ld-linux") || starts_with(base, "ld64.so") || starts_with(base, "ld.so");
}

// The C and C++ runtime every native program links: what it allocates with no caller of the
// program's is its own.
bool is_runtime_module(const std::string& module) {
  std::string base = module_base_name(module);
  return is_loader(base) || starts_with(base, "libc.so") || starts_with(base, "libstdc++.so") ||
         starts_with(base, "libgcc_s.so") || starts_with(base, "libm.so") || starts_with(base, "libpthread.so");
}

bool glob(const std::string& pattern, const std::string& text) {
  return !text.empty() && fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool matches(const SuppressionRule& rule, const SymbolizedFrame& frame) {
  switch (rule.field) {
    case SuppressionRule::Field::kFunction: return glob(rule.pattern, frame.function);
    case SuppressionRule::Field::kFile: return glob(rule.pattern, frame.file);
    case SuppressionRule::Field::kModule: return glob(rule.pattern, frame.module);
    case SuppressionRule::Field::kAny:
      return glob(rule.pattern, frame.function) || glob(rule.pattern, frame.file) || glob(rule.pattern, frame.module);
  }
  return false;
}

// shown() is a line of the file as an error quotes it: printable, and short.
std::string shown(const std::string& line) {
  std::string out;
  for (char c : line.substr(0, 80)) out += static_cast<unsigned char>(c) >= 0x20 && c != 0x7f ? c : '?';
  return line.size() > 80 ? out + "..." : out;
}

std::string trimmed(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

Suppressions Suppressions::parse(const std::string& text, const std::string& origin) {
  Suppressions suppressions;
  std::istringstream lines(text);
  std::string raw;
  for (int number = 1; std::getline(lines, raw); ++number) {
    std::string line = trimmed(raw);
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    std::string field = colon == std::string::npos ? "" : trimmed(line.substr(0, colon));
    std::string pattern = colon == std::string::npos ? "" : trimmed(line.substr(colon + 1));
    SuppressionRule rule;
    if (field == "function") {
      rule.field = SuppressionRule::Field::kFunction;
    } else if (field == "file") {
      rule.field = SuppressionRule::Field::kFile;
    } else if (field == "module") {
      rule.field = SuppressionRule::Field::kModule;
    } else if (field == "leak") {
      rule.field = SuppressionRule::Field::kAny;
    } else {
      throw SuppressionError(fmt::format("{}:{}: not a rule (function:GLOB, file:GLOB, module:GLOB or leak:GLOB): {}",
                                         origin, number, shown(line)));
    }
    if (pattern.empty()) throw SuppressionError(fmt::format("{}:{}: the rule has no pattern: {}", origin, number, shown(line)));
    rule.pattern = pattern;
    rule.text = field + ":" + pattern;
    rule.origin = origin;
    rule.line = number;
    suppressions.rules_.push_back(std::move(rule));
  }
  return suppressions;
}

Suppressions Suppressions::load(const std::string& path) {
  std::string text, why;
  if (!read_text_file(path, &text, &why)) throw SuppressionError(fmt::format("{}: cannot read the suppressions file: {}", path, why));
  return parse(text, path);
}

void Suppressions::append(const Suppressions& other) {
  rules_.insert(rules_.end(), other.rules_.begin(), other.rules_.end());
}

std::vector<const SuppressionRule*> Suppressions::unmatched() const {
  std::vector<const SuppressionRule*> rules;
  for (const SuppressionRule& rule : rules_) {
    if (!rule.matched) rules.push_back(&rule);
  }
  return rules;
}

const SuppressionRule* Suppressions::match(const std::vector<SymbolizedFrame>& frames) const {
  for (const SuppressionRule& rule : rules_) {
    for (const SymbolizedFrame& frame : frames) {
      if (!matches(rule, frame)) continue;
      rule.matched = true;
      return &rule;
    }
  }
  return nullptr;
}

const char* const kGoRuntimeMappings =
    "the Go runtime's mappings (its heap arenas, goroutine stacks and their metadata), which Go never unmaps";

namespace {

const SymbolizedFrame& frame_of(const SymbolizedFrame& frame) { return frame; }
const SymbolizedFrame& frame_of(const SymbolizedFrame* frame) { return *frame; }

// is_libc_function() tells `function` of glibc by its name or by the internal alias its symbols
// give it (__GI_<name>): glibc's own calls go through those.
bool is_libc_function(const SymbolizedFrame& frame, std::string_view function) {
  std::string_view name = frame.function;
  if (name.substr(0, 5) == "__GI_") name.remove_prefix(5);
  return name == function;
}

// is_test_runner_code() tells the Python code of pytest and pluggy (its plugin calls) as installed
// (site-packages, or Debian's dist-packages: a project's own tests/pytest/ directory is not
// pytest), and of runpy (`python -m pytest`).
bool is_test_runner_code(const SymbolizedFrame& frame) {
  for (std::string_view directory : {"-packages/_pytest/", "-packages/pytest/", "-packages/pluggy/"}) {
    if (frame.file.find(directory) != std::string::npos) return true;
  }
  return frame.file == "<frozen runpy>" || frame.file.ends_with("/runpy.py");
}

// is_go_runtime_mapping() tells a mapping the Go runtime made: through x_cgo_mmap, cgo's wrapper
// of mmap, which Go's runtime.mmap calls in a program that links C (without cgo, Go makes its own
// system calls and no hook sees them).
bool is_go_runtime_mapping(const SymbolizedFrame& innermost) { return innermost.function == "x_cgo_mmap"; }

template <typename Frames>
const char* runtime_residue_of(const Frames& frames) {
  const SymbolizedFrame* innermost = nullptr;
  bool runtime_only = true;
  int interpreted = 0, test_runner = 0;
  for (const auto& each : frames) {
    const SymbolizedFrame& frame = frame_of(each);
    if (internal::is_startup_marker(frame.address)) continue;
    if (innermost == nullptr) innermost = &frame;
    if (frame.address == internal::kFreeListFrame) {
      return "the interpreter's own free lists (tuples it keeps to hand out again, a bounded number of each length)";
    }
    if (frame.address == internal::kPythonFrameStackFrame) {
      return "the interpreter's stack of frames (chunks of its frames' data, as deep as its calls went)";
    }
    if (is_libc_function(frame, "_IO_file_doallocate")) return "a stdio buffer";
    if (is_libc_function(frame, "__add_to_environ")) {
      return "the C library's copies of environment variables (setenv keeps every value it was given)";
    }
    if (!frame.language.empty()) {
      ++interpreted;
      test_runner += is_test_runner_code(frame) ? 1 : 0;
    }
    if (!frame.language.empty() || !is_runtime_module(frame.module)) runtime_only = false;
  }
  if (innermost == nullptr) return nullptr;
  if (is_go_runtime_mapping(*innermost)) return kGoRuntimeMappings;
  if (is_loader(module_base_name(innermost->module))) return "the dynamic loader's own (link maps, thread TLS blocks)";
  if (runtime_only) return "the C and C++ runtime's own (libstdc++'s emergency exception pool)";
  // Code of the tests' own, or of what they test, makes the stack the program's.
  if (interpreted > 0 && test_runner == interpreted) return "pytest's own records of the tests it ran";
  return nullptr;
}

// is_foreign_call() tells the modules through which interpreted code calls C functions itself
// (ctypes, cffi: libffi), and so can lose what `malloc` returns to it.
bool is_foreign_call(const std::string& module) {
  std::string base = module_base_name(module);
  return base.rfind("libffi", 0) == 0 || base.rfind("_ctypes", 0) == 0 || base.rfind("_cffi_backend", 0) == 0;
}

template <typename Frames>
const char* lost_residue_of(const Frames& frames, const FrameRoles& roles) {
  if (const char* residue = runtime_residue_of(frames)) return residue;
  bool native_below = false;  // the native code that made the block: a stack without it tells nothing
  for (const auto& each : frames) {
    const SymbolizedFrame& frame = frame_of(each);
    if (frame.address == internal::kImportFrame || !frame.language.empty()) {
      return native_below ? "the interpreter's or a framework's own (lost beneath interpreted code, which cannot lose a block)"
                          : nullptr;
    }
    if (internal::is_startup_marker(frame.address) || roles.is_user(frame) || is_foreign_call(frame.module)) return nullptr;
    native_below = true;
  }
  return nullptr;
}

}  // namespace

const char* runtime_residue(const std::vector<SymbolizedFrame>& frames) { return runtime_residue_of(frames); }

template <typename Frame>
const char* runtime_residue(const std::vector<const Frame*>& frames) {
  return runtime_residue_of(frames);
}
template const char* runtime_residue(const std::vector<const SymbolizedFrame*>& frames);

const char* lost_residue(const std::vector<SymbolizedFrame>& frames, const FrameRoles& roles) {
  return lost_residue_of(frames, roles);
}

template <typename Frame>
const char* lost_residue(const std::vector<const Frame*>& frames, const FrameRoles& roles) {
  return lost_residue_of(frames, roles);
}
template const char* lost_residue(const std::vector<const SymbolizedFrame*>& frames, const FrameRoles& roles);

}  // namespace leakscope::report
