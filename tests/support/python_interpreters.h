// File: python_interpreters.h
//
// The CPython interpreters the tests run Python code on: Debian's python3.11 (libpython linked
// into the executable) and pyenv's 3.10-3.13 (libpython as a shared library). A test whose
// interpreter is missing skips, saying so.
#ifndef LEAKSCOPE_TESTS_SUPPORT_PYTHON_INTERPRETERS_H_
#define LEAKSCOPE_TESTS_SUPPORT_PYTHON_INTERPRETERS_H_

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

namespace leakscope::testing {

struct PythonInterpreter {
  std::string name;  // for the test's name
  std::string path;
  int minor;         // 3.X
};

inline std::string pyenv_python(const std::string& version) {
  const char* root = std::getenv("PYENV_ROOT");
  const char* home = std::getenv("HOME");
  std::string base = root != nullptr ? root : std::string(home != nullptr ? home : "/root") + "/.pyenv";
  return base + "/versions/" + version + "/bin/python3";
}

inline std::vector<PythonInterpreter> python_interpreters() {
  return {{"Debian311", "/usr/bin/python3.11", 11},
          {"Cpython310", pyenv_python("3.10.13"), 10},
          {"Cpython311", pyenv_python("3.11.7"), 11},
          {"Cpython312", pyenv_python("3.12.1"), 12},
          {"Cpython313", pyenv_python("3.13.0"), 13}};
}

// Names the interpreter in test output instead of its bytes.
inline void PrintTo(const PythonInterpreter& interpreter, std::ostream* out) { *out << interpreter.path; }

}  // namespace leakscope::testing

#endif  // LEAKSCOPE_TESTS_SUPPORT_PYTHON_INTERPRETERS_H_
