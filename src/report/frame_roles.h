// File: frame_roles.h
//
// Which frames of a symbolized stack are the program's own code and which belong to the runtime
// and frameworks beneath it, so that a site is named by the user's code (docs/ANALYSIS.md, "user
// frame") and framework frames can be folded away.
//
// A frame is not a user frame when its module is the C or C++ runtime (libc, ld.so, libstdc++,
// libgcc, libm), an allocator (libjemalloc, libtcmalloc, libmimalloc) or leakscope itself, a
// framework (libc10, libtorch*, torch's _C extension, libgomp, libpython, a python executable), a
// library installed by the system or a package manager (under /lib, /usr/lib, Python's
// lib-dynload, site-packages or dist-packages), or a module named by --fold; nor when it is
// standard-library or framework code instantiated or inlined into the program (std::, __gnu_cxx::,
// c10::, at::, torch::, pybind11::, operator new). The program's executable is always its own code,
// wherever it is installed, unless it is an interpreter. A Python frame is a user frame unless its
// file belongs to the standard library or an installed package.
#ifndef LEAKSCOPE_REPORT_FRAME_ROLES_H_
#define LEAKSCOPE_REPORT_FRAME_ROLES_H_

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/symbolizer.h"

namespace leakscope::report {

class FrameRoles {
 public:
  // `fold` is --fold's comma-separated list: groups "torch" and "python", or module-name fragments;
  // `executable` the traced program's path.
  explicit FrameRoles(const std::string& fold = "", const std::string& executable = "");

  bool is_user(const SymbolizedFrame& frame) const;

  // is_framework_module() is true when no frame of the module at `path` can be a user frame.
  bool is_framework_module(const std::string& path) const;

  // is_generated_python() is true for Python code compiled from a string (`<string>`: what
  // namedtuple, dataclasses and .pth lines exec, `python -c`, a subinterpreter's script): the
  // program's own only when no Python frame from a file calls it; else the frames around it
  // decide (user_frames()).
  static bool is_generated_python(const SymbolizedFrame& frame);

  // user_frames() is the first `count` user frames of a whole stack, innermost first.
  std::vector<const SymbolizedFrame*> user_frames(const std::vector<const SymbolizedFrame*>& frames, size_t count) const;

 private:
  bool classify_module(const std::string& path) const;

  std::vector<std::string> folded_;  // --fold's module-name fragments
  std::string executable_;
  // is_framework_module() by path: a report asks it for every frame of every site, and a process
  // has a few hundred modules.
  mutable std::unordered_map<std::string, bool> framework_modules_;
};

// FrameFolder collapses each run of consecutive frames from framework modules into one frame, so
// the program's own calls stand out in deep stacks (leakscope report --fold torch,python).
// Groups: "torch" (libtorch*, libc10*, torch's _C extension), "python" (libpython*, python3*);
// any other name matches modules whose file name contains it.
class FrameFolder {
 public:
  // Parses a comma-separated list; an empty one folds nothing.
  explicit FrameFolder(const std::string& groups);
  std::vector<SymbolizedFrame> fold(const std::vector<SymbolizedFrame>& frames) const;
  bool empty() const { return patterns_.empty(); }

 private:
  bool matches(const std::string& module) const;
  std::vector<std::string> patterns_;  // substrings of a module's file name
};

// fold_patterns() expands --fold's list into module-name fragments ("torch" and "python" are
// groups of several).
std::vector<std::string> fold_patterns(const std::string& groups);

// is_library_python_file() is true for Python code of the standard library, of installed
// packages (site-packages, dist-packages) and of the interpreter's frozen modules: Python frames
// in any other file are the program's own.
bool is_library_python_file(const std::string& file);

// module_base_name() is the file name of a module path, without its directories.
std::string module_base_name(const std::string& module);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_FRAME_ROLES_H_
