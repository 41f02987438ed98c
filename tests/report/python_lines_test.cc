// Line tables decoded as each CPython decodes them: every interpreter this machine has compiles
// a module of loops, branches, handlers, multi-line expressions, long jumps in lines and nested
// code, and prints each code object's line table with its own co_lines(); python_line() must give
// the same line for every instruction. A missing interpreter is skipped, saying so.
#include "report/python_lines.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/stream_format.h"
#include "support/python_interpreters.h"

namespace leakscope::report {
namespace {

constexpr const char* kDumpTables = R"PY(
import json, types
SOURCE = '''
def branches(a):
    x = 1
    for i in range(3):
        if i:
            x += i
        else:
            x -= 1
    try:
        y = 1 / a
    except ZeroDivisionError:
        y = 0
    finally:
        x += 1
    return (x,
            y)
''' + "\n" * 300 + '''
def far_below():
    return [i * 2
            for i in range(10)
            if i]

class Holder:
    def method(self):
        return lambda z: (z +
                          1)

async def coroutine():
    return 1
'''
def walk(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from walk(constant)
for code in walk(compile(SOURCE, "t.py", "exec")):
    print(json.dumps({"first": code.co_firstlineno, "table": code.co_linetable.hex(),
                      "ranges": [[s, e, l] for s, e, l in code.co_lines()]}))
)PY";

std::string bytes_from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

std::string run_python(const std::string& python) {
  std::string script = std::filesystem::temp_directory_path() / ("line_tables_" + std::to_string(getpid()) + ".py");
  FILE* file = fopen(script.c_str(), "w");
  fputs(kDumpTables, file);
  fclose(file);
  std::string command = python + " " + script;
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  std::filesystem::remove(script);
  return out;
}

using testing::PythonInterpreter;

class PythonLines : public ::testing::TestWithParam<PythonInterpreter> {};

TEST_P(PythonLines, EveryInstructionHasTheInterpretersLine) {
  const std::string& python = GetParam().path;
  int minor = GetParam().minor;
  if (!std::filesystem::exists(python)) GTEST_SKIP() << python << " is not installed";
  uint32_t format = minor == 10 ? internal::kLineTablePython310 : internal::kLineTablePython311;
  std::istringstream lines(run_python(python));
  std::string line;
  int codes = 0, instructions = 0;
  while (std::getline(lines, line)) {
    nlohmann::json code = nlohmann::json::parse(line);
    std::string table = bytes_from_hex(code["table"]);
    int first = code["first"];
    ++codes;
    for (const auto& range : code["ranges"]) {
      int expected = range[2].is_null() ? -1 : range[2].get<int>();
      for (uint32_t offset = range[0]; offset < range[1].get<uint32_t>(); offset += 2) {
        ++instructions;
        ASSERT_EQ(python_line(format, table, first, offset), expected) << python << " code at line " << first << ", offset " << offset;
      }
    }
  }
  EXPECT_GE(codes, 6);
  EXPECT_GE(instructions, 100);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonLines, ::testing::ValuesIn(testing::python_interpreters()),
                         [](const ::testing::TestParamInfo<PythonInterpreter>& info) { return info.param.name; });

}  // namespace
}  // namespace leakscope::report
