#include "report/frame_roles.h"

#include <cctype>

namespace leakscope::report {
namespace {

// Module file-name prefixes of the runtime and frameworks beneath the program.
constexpr const char* kFrameworkModules[] = {
    "libc.so", "libc-", "ld-linux", "ld64.so", "libstdc++", "libgcc_s", "libm.so", "libpthread", "libdl.so",
    "librt.so", "libleakscope", "libjemalloc", "libtcmalloc", "libmimalloc", "libc10", "libtorch", "libgomp",
    "libpython", "_C.cpython", "libcudart", "libcuda.so", "libcupti",
};

// Where the system and package managers install libraries: no program's own code.
constexpr const char* kSystemLibraryDirectories[] = {"/lib/", "/lib64/", "/lib32/", "/usr/lib/", "/usr/lib64/", "/usr/lib32/",
                                                     "/usr/libexec/"};
constexpr const char* kPackageDirectories[] = {"/lib-dynload/", "/site-packages/", "/dist-packages/"};

// Function-name prefixes of library code instantiated or inlined into the program.
constexpr const char* kFrameworkFunctions[] = {
    "std::", "__gnu_cxx::", "__cxxabiv1::", "__cxa_", "operator new", "operator delete",
    "c10::", "at::", "torch::", "caffe2::", "pybind11::",
};

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// qualified_name() drops the return type that demangled template functions start with ("void
// std::vector<int>::_M_realloc_insert<int>(…)" -> "std::vector<int>::_M_realloc_insert<int>(…)"):
// what follows the last space outside brackets that comes before the parameter list.
std::string qualified_name(const std::string& function) {
  static const std::string kAnonymous = "(anonymous namespace)";
  int angles = 0;
  size_t name_start = 0;
  for (size_t i = 0; i < function.size(); ++i) {
    char c = function[i];
    if (c == '(' && function.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size() - 1;
    } else if (c == '(' && angles == 0 && i >= 9 && function.compare(i - 9, 9, "decltype ") == 0) {
      // a return type "decltype (…)": skip it whole
      for (int depth = 0; i < function.size(); ++i) {
        if (function[i] == '(') ++depth;
        if (function[i] == ')' && --depth == 0) break;
      }
    } else if (c == '<') {
      ++angles;
    } else if (c == '>') {
      --angles;
    } else if (c == '(' && angles == 0) {
      break;  // the parameter list
    } else if (c == ' ' && angles == 0) {
      name_start = i + 1;
    }
  }
  return function.substr(name_start);
}

// is_interpreter_executable() is true for "python", "python3", "python3.11"...
bool is_interpreter_executable(const std::string& name) {
  if (!starts_with(name, "python")) return false;
  for (size_t i = 6; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) && name[i] != '.') return false;
  }
  return true;
}

}  // namespace

bool is_library_python_file(const std::string& file) {
  if (starts_with(file, "<frozen ")) return true;  // importlib and friends, compiled into the interpreter
  if (file.find("/share/leakscope/python/") != std::string::npos) return true;  // leakscope's own package
  for (const char* directory : kPackageDirectories) {
    if (file.find(directory) != std::string::npos) return true;
  }
  // The standard library: .../lib/python3.X/...
  size_t lib = file.find("/lib/python3");
  return lib != std::string::npos && file.find('/', lib + 12) != std::string::npos;
}

std::string module_base_name(const std::string& module) {
  size_t slash = module.rfind('/');
  return slash == std::string::npos ? module : module.substr(slash + 1);
}

std::vector<std::string> fold_patterns(const std::string& groups) {
  std::vector<std::string> patterns;
  size_t at = 0;
  while (at < groups.size()) {
    size_t end = groups.find(',', at);
    if (end == std::string::npos) end = groups.size();
    std::string group = groups.substr(at, end - at);
    if (group == "torch") {
      patterns.insert(patterns.end(), {"libtorch", "libc10", "_C.cpython"});
    } else if (group == "python") {
      patterns.insert(patterns.end(), {"libpython", "python3"});
    } else if (!group.empty()) {
      patterns.push_back(group);
    }
    at = end + 1;
  }
  return patterns;
}

FrameRoles::FrameRoles(const std::string& fold, const std::string& executable)
    : folded_(fold_patterns(fold)), executable_(executable) {}

bool FrameRoles::is_framework_module(const std::string& path) const {
  auto known = framework_modules_.find(path);
  if (known != framework_modules_.end()) return known->second;
  bool framework = classify_module(path);
  framework_modules_.emplace(path, framework);
  return framework;
}

bool FrameRoles::classify_module(const std::string& path) const {
  if (path.empty() || path[0] == '[') return true;  // [unknown], [vdso]
  std::string name = module_base_name(path);
  bool executable = !executable_.empty() && path.compare(0, executable_.size(), executable_) == 0;
  if (!executable) {
    for (const char* directory : kSystemLibraryDirectories) {
      if (starts_with(path, directory)) return true;
    }
    for (const char* directory : kPackageDirectories) {
      if (path.find(directory) != std::string::npos) return true;
    }
  }
  for (const char* prefix : kFrameworkModules) {
    if (starts_with(name, prefix)) return true;
  }
  if (is_interpreter_executable(name)) return true;
  for (const std::string& pattern : folded_) {
    if (name.find(pattern) != std::string::npos) return true;
  }
  return false;
}

bool FrameRoles::is_user(const SymbolizedFrame& frame) const {
  if (frame.language == "python") return !is_library_python_file(frame.file);
  if (is_framework_module(frame.module)) return false;
  std::string name = qualified_name(frame.function);
  for (const char* prefix : kFrameworkFunctions) {
    if (starts_with(frame.function, prefix) || starts_with(name, prefix)) return false;
  }
  return true;
}

bool FrameRoles::is_generated_python(const SymbolizedFrame& frame) {
  return frame.language == "python" && starts_with(frame.file, "<") && !starts_with(frame.file, "<frozen ");
}

namespace {

// has_python_caller() is whether a Python frame from a file (not one compiled from a string) calls
// frames[index], however far out.
bool has_python_caller(const std::vector<const SymbolizedFrame*>& frames, size_t index) {
  for (size_t i = index + 1; i < frames.size(); ++i) {
    if (frames[i]->language == "python" && !FrameRoles::is_generated_python(*frames[i])) return true;
  }
  return false;
}

}  // namespace

std::vector<const SymbolizedFrame*> FrameRoles::user_frames(const std::vector<const SymbolizedFrame*>& frames,
                                                            size_t count) const {
  std::vector<const SymbolizedFrame*> found;
  for (size_t i = 0; i < frames.size() && found.size() < count; ++i) {
    if (is_user(*frames[i]) && !(is_generated_python(*frames[i]) && has_python_caller(frames, i))) found.push_back(frames[i]);
  }
  return found;
}

FrameFolder::FrameFolder(const std::string& groups) : patterns_(fold_patterns(groups)) {}

bool FrameFolder::matches(const std::string& module) const {
  std::string name = module_base_name(module);
  for (const std::string& pattern : patterns_) {
    if (name.find(pattern) != std::string::npos) return true;
  }
  return false;
}

std::vector<SymbolizedFrame> FrameFolder::fold(const std::vector<SymbolizedFrame>& frames) const {
  if (patterns_.empty()) return frames;
  std::vector<SymbolizedFrame> folded;
  for (const SymbolizedFrame& frame : frames) {
    if (!matches(frame.module)) {
      folded.push_back(frame);
      continue;
    }
    std::string name = module_base_name(frame.module);
    if (!folded.empty() && folded.back().folded > 0) {
      SymbolizedFrame& run = folded.back();
      ++run.folded;
      if (run.module.find(name) == std::string::npos) run.module += ", " + name;
    } else {
      SymbolizedFrame run = frame;
      run.folded = 1;
      run.module = name;
      run.file.clear();
      run.line = 0;
      run.inlined = false;
      folded.push_back(run);
    }
  }
  for (SymbolizedFrame& frame : folded) {
    if (frame.folded > 0) frame.function = "[" + std::to_string(frame.folded) + " frames in " + frame.module + "]";
  }
  return folded;
}

}  // namespace leakscope::report
