#include "report/suppressions.h"

#include <gtest/gtest.h>

#include "core/stream_format.h"
#include "report/frame_roles.h"
#include "report/leak_gate.h"

namespace leakscope::report {
namespace {

SymbolizedFrame frame(const std::string& function, const std::string& module, const std::string& file = "") {
  SymbolizedFrame symbolized;
  symbolized.function = function;
  symbolized.module = module;
  symbolized.file = file;
  return symbolized;
}

SymbolizedFrame marker(uint64_t kind) {
  SymbolizedFrame symbolized;
  symbolized.address = kind;
  symbolized.function = "[before main; outer frames left out (startup_depth)]";
  return symbolized;
}

TEST(Suppressions, ParsesEachFieldSkippingCommentsAndBlankLines) {
  Suppressions rules = Suppressions::parse(
      "# known leaks\n\n  function: *Legacy::init*  \nfile:*/vendor/*\nmodule:*libcuda.so*\nleak:zlib_*\n", "rules.supp");
  std::vector<SymbolizedFrame> legacy{frame("Legacy::init(int)", "/opt/app/libold.so")};
  ASSERT_NE(rules.match(legacy), nullptr);
  EXPECT_EQ(rules.match(legacy)->text, "function:*Legacy::init*");
  EXPECT_EQ(rules.match(legacy)->line, 3);
  EXPECT_EQ(rules.match(legacy)->origin, "rules.supp");
  EXPECT_EQ(rules.match({frame("parse", "/app", "/src/vendor/json.c")})->text, "file:*/vendor/*");
  EXPECT_EQ(rules.match({frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")})->text, "module:*libcuda.so*");
  // leak: matches the function, the file or the module, as LeakSanitizer's does.
  EXPECT_EQ(rules.match({frame("zlib_inflate", "/app")})->line, 6);
  EXPECT_EQ(rules.match({frame("f", "/opt/zlib_local.so")}), nullptr);
  EXPECT_EQ(rules.match({frame("f", "zlib_local.so")})->line, 6);
}

TEST(Suppressions, AnyFrameOfTheStackMatchesButOnlyWholeFields) {
  Suppressions rules = Suppressions::parse("function:load_plugin\n", "r");
  std::vector<SymbolizedFrame> stack{frame("malloc_wrapper", "/app"), frame("load_plugin", "/app"), frame("main", "/app")};
  EXPECT_NE(rules.match(stack), nullptr);
  EXPECT_EQ(rules.match({frame("load_plugins", "/app")}), nullptr);
  EXPECT_EQ(rules.match({frame("", "/app")}), nullptr);  // an unknown function matches nothing
}

TEST(Suppressions, ABadLineNamesItsFileAndNumber) {
  try {
    Suppressions::parse("function:ok\n\nsomething\n", "app.supp");
    FAIL() << "accepted a line that is no rule";
  } catch (const SuppressionError& error) {
    EXPECT_STREQ(error.what(), "app.supp:3: not a rule (function:GLOB, file:GLOB, module:GLOB or leak:GLOB): something");
  }
  EXPECT_THROW(Suppressions::parse("module:\n", "app.supp"), SuppressionError);
  EXPECT_THROW(Suppressions::load("/nonexistent/app.supp"), SuppressionError);
}

SymbolizedFrame python_frame(const std::string& function, const std::string& file) {
  SymbolizedFrame symbolized = frame(function, "", file);
  symbolized.language = "python";
  return symbolized;
}

TEST(Suppressions, AppendKeepsEachFilesRulesInOrder) {
  Suppressions first = Suppressions::parse("function:a\n", "one.supp");
  first.append(Suppressions::parse("function:b\n", "two.supp"));
  EXPECT_EQ(first.match({frame("b", "/app")})->origin, "two.supp");
  EXPECT_EQ(first.match({frame("a", "/app")})->origin, "one.supp");
}

TEST(RuntimeResidue, TheLoadersTheCLibrarysTheCxxRuntimesTheInterpretersAndTheTestRunnersOwn) {
  const std::string loader = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  const std::string libstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
  // A thread's TLS block: allocated inside ld.so for the program's pthread_create.
  EXPECT_NE(runtime_residue({frame("_dl_allocate_tls", loader), frame("pthread_create", libc), frame("start_worker", "/app")}),
            nullptr);
  EXPECT_NE(runtime_residue({frame("_IO_file_doallocate", libc), frame("_IO_doallocbuf", libc), frame("main", "/app")}),
            nullptr);
  // As glibc's debug symbols name the same function: its internal alias.
  EXPECT_NE(runtime_residue({frame("__GI__IO_file_doallocate", libc), frame("__GI__IO_doallocbuf", libc),
                             frame("main", "/app")}),
            nullptr);
  // Tuples CPython keeps on its free list: the marker stack alone.
  EXPECT_NE(runtime_residue({marker(internal::kFreeListFrame)}), nullptr);
  // glibc's copies of environment variables, which setenv never frees, whoever calls it.
  EXPECT_NE(runtime_residue({frame("__GI___tsearch", libc), frame("__add_to_environ", libc), frame("setenv", libc),
                             frame("configure", "/app")}),
            nullptr);
  // pytest's report of each test it ran: only the runner's code (pytest, pluggy, runpy) made it.
  const std::string pytest = "/usr/lib/python3/dist-packages/_pytest/";
  EXPECT_NE(runtime_residue({frame("", "/usr/bin/python3.11"), python_frame("TestReport.from_item_and_call", pytest + "reports.py"),
                             python_frame("_multicall", "/usr/lib/python3/dist-packages/pluggy/_callers.py"),
                             python_frame("<module>", "/usr/lib/python3/dist-packages/pytest/__main__.py"),
                             python_frame("_run_module_as_main", "<frozen runpy>")}),
            nullptr);
  // A project's own directory named like the runner is not the runner.
  EXPECT_EQ(runtime_residue({frame("", "/usr/bin/python3.11"), python_frame("test_parse", "/src/tests/pytest/test_parse.py"),
                             python_frame("_multicall", "/usr/lib/python3/dist-packages/pluggy/_callers.py")}),
            nullptr);
  // A test's own code, or the code it tests, beneath the runner makes the block the program's.
  EXPECT_EQ(runtime_residue({frame("", "/usr/bin/python3.11"), python_frame("test_tokenize", "/src/tests/test_text.py"),
                             python_frame("pytest_pyfunc_call", pytest + "python.py")}),
            nullptr);
  // libstdc++'s emergency pool: its initializer, cut at the before-main marker, nothing of the program's.
  EXPECT_NE(runtime_residue({frame("", libstdcxx), marker(internal::kBeforeMainFrame)}), nullptr);
  EXPECT_NE(runtime_residue({frame("", libstdcxx), frame("_dl_init", loader)}), nullptr);
  // What the program allocates through the runtime is the program's.
  EXPECT_EQ(runtime_residue({frame("std::string::_M_create", libstdcxx), frame("handle", "/app")}), nullptr);
  EXPECT_EQ(runtime_residue({frame("strdup", libc), frame("<module>", "", "app.py")}), nullptr);
  EXPECT_EQ(runtime_residue({frame("register_schema", "/app"), marker(internal::kBeforeMainFrame)}), nullptr);
  EXPECT_EQ(runtime_residue({}), nullptr);
}

TEST(LostResidue, LossesBeneathInterpretedCodeWithNoNativeFrameOfTheProgramAreTheRuntimes) {
  FrameRoles roles("", "/usr/bin/python3.11");
  SymbolizedFrame import_marker = marker(internal::kImportFrame);
  // import torch: CPython's own C code, the import marker, then the script.
  EXPECT_NE(lost_residue({frame("_PyCode_New", "/usr/bin/python3.11"), import_marker,
                          python_frame("<module>", "/srv/app.py")},
                         roles),
            nullptr);
  EXPECT_NE(lost_residue({frame("PyBytes_FromStringAndSize", "/usr/bin/python3.11"),
                          python_frame("handle", "/srv/app.py")},
                         roles),
            nullptr);
  // The program's own extension between: its loss.
  EXPECT_EQ(lost_residue({frame("PyMem_Malloc", "/usr/bin/python3.11"), frame("parse_blob", "/srv/build/_fast.so"),
                          python_frame("handle", "/srv/app.py")},
                         roles),
            nullptr);
  // A native program's own loss.
  EXPECT_EQ(lost_residue({frame("make_node", "/srv/bin/server"), frame("main", "/srv/bin/server")}, FrameRoles("", "/srv/bin/server")),
            nullptr);
  // Python code that calls malloc through ctypes can lose what it returns.
  EXPECT_EQ(lost_residue({frame("ffi_call_unix64", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
                          frame("_ctypes_callproc", "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
                          python_frame("global_malloc", "/srv/app.py")},
                         roles),
            nullptr);
  // A stack of interpreted frames only says nothing of the native code that made the block.
  EXPECT_EQ(lost_residue({python_frame("handle", "/srv/app.py")}, roles), nullptr);
  // runtime_residue()'s reasons hold too.
  EXPECT_NE(lost_residue({frame("_dl_allocate_tls", "/lib64/ld-linux-x86-64.so.2")}, roles), nullptr);
}

TEST(GroupMatchKey, FunctionAndFileNameWithoutLineOrAddress) {
  SymbolizedFrame a = frame("parse_record", "/build/a/app", "/src/a/parser.c");
  a.line = 17;
  a.address = 0x1000;
  SymbolizedFrame b = frame("parse_record", "/build/b/app", "/other/checkout/parser.c");
  b.line = 30;
  b.address = 0x2000;
  EXPECT_EQ(group_match_key(a), group_match_key(b));
  EXPECT_NE(group_match_key(a), group_match_key(frame("parse_header", "/build/a/app", "/src/a/parser.c")));
  SymbolizedFrame unknown = frame("", "/usr/lib/libfoo.so.1");
  unknown.module_offset = 0x2631;
  EXPECT_EQ(group_match_key(unknown), "libfoo.so.1+0x2631");
}

}  // namespace
}  // namespace leakscope::report
