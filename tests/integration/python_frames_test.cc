// Python frames in the stacks of a Python service, on every CPython 3.10-3.13 this machine has:
// Debian's python3.11 (libpython linked into the executable) and pyenv's 3.10-3.13 (libpython as
// a shared library). A test whose interpreter is missing is skipped, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "harness.h"
#include "support/python_interpreters.h"

namespace leakscope::testing {
namespace {

class PythonFrames : public ::testing::TestWithParam<PythonInterpreter> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(GetParam().path)) {
      GTEST_SKIP() << GetParam().path << " is not installed: Python frames are not tested on it";
    }
  }

  // serve() runs the fixture service in `mode` and returns the report's JSON.
  nlohmann::json serve(const std::string& mode, const std::string& file_name = "run.lsc") {
    file_ = scratch_dir() + "/" + file_name;
    Outcome run = leakscope({"run", "-o", file_, "--", GetParam().path, fixture_source("python_app/service.py"), mode});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    last_out_ = run.out;
    Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file_});
    EXPECT_EQ(report.exit_code, 0) << report.err;
    return nlohmann::json::parse(report.out);
  }

  // run_script() runs `script` (-c, after the interpreter's `options`) and returns the report's
  // JSON; what the script printed is in last_out_.
  nlohmann::json run_script(const char* script, const std::vector<std::string>& options = {}) {
    file_ = scratch_dir() + "/run.lsc";
    std::vector<std::string> args = {"run", "-o", file_, "--", GetParam().path};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"-c", script});
    Outcome run = leakscope(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    last_out_ = run.out;
    Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file_});
    EXPECT_EQ(report.exit_code, 0) << report.err;
    return nlohmann::json::parse(report.out);
  }

  std::string file_;
  std::string last_out_;
};

// Sites whose first user frame is `function`, with their live bytes and blocks summed.
struct Found {
  int64_t bytes = 0;
  int64_t blocks = 0;
  std::vector<nlohmann::json> sites;
};

Found sites_named(const nlohmann::json& report, const std::string& function) {
  Found found;
  for (const auto& site : report["sites"]) {
    const auto& frame = site["first_user_frame"];
    if (frame.is_null() || frame["function"] != function) continue;
    found.bytes += site["live_bytes"].get<int64_t>();
    found.blocks += site["live_blocks"].get<int64_t>();
    found.sites.push_back(site);
  }
  return found;
}

// python_frames() lists a site's Python frames, innermost first, as "function:line".
std::vector<std::string> python_frames(const nlohmann::json& site) {
  std::vector<std::string> frames;
  for (const auto& frame : site["frames"]) {
    if (frame["language"] == "python") frames.push_back(frame["function"].get<std::string>() + ":" + std::to_string(frame["line"].get<int>()));
  }
  return frames;
}

TEST_P(PythonFrames, LeakInAModuleIsFoundAtItsLineWithItsCallersBelow) {
  nlohmann::json report = serve("bytes");
  Found found = sites_named(report, "remember_output");
  EXPECT_EQ(found.blocks, 300 * 2 + 1) << "each bytearray is an object and its buffer, and the list that keeps them grows there";
  int line = marker_line("python_app/leaky_module.py", "remember_output");
  const nlohmann::json* buffer = nullptr;
  for (const auto& site : found.sites) {
    if (site["live_blocks"] == 300 && site["live_bytes"].get<int64_t>() >= 300 * 20000) buffer = &site;
  }
  ASSERT_NE(buffer, nullptr) << report["sites"].dump().substr(0, 2000);
  EXPECT_EQ((*buffer)["first_user_frame"]["line"], line);
  EXPECT_TRUE((*buffer)["first_user_frame"]["file"].get<std::string>().ends_with("python_app/leaky_module.py"));
  std::vector<std::string> expected = {"remember_output:" + std::to_string(line),
                                       "handle:" + std::to_string(marker_line("python_app/service.py", "handle")),
                                       "serve_bytes:" + std::to_string(marker_line("python_app/service.py", "serve_bytes"))};
  std::vector<std::string> frames = python_frames(*buffer);
  ASSERT_GE(frames.size(), expected.size() + 1);  // and <module> below
  EXPECT_EQ(std::vector<std::string>(frames.begin(), frames.begin() + 3), expected);
  EXPECT_EQ(frames.back().rfind("<module>:", 0), 0u) << frames.back();
  // The allocator path above the Python frame is native and stays.
  EXPECT_EQ((*buffer)["frames"][0]["language"], "native");
  // As text, folding the interpreter away: the Python frames stay, named as the issue shows them.
  Outcome text = leakscope({"report", "--fold", "python", "--frames", "12", file_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("remember_output (leaky_module.py:" + std::to_string(line) + ") [python]"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("handle (service.py:"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("_PyEval_EvalFrameDefault"), std::string::npos) << text.out;
}

// What a module builds as it is imported is start-up, named by the line that imports it: its
// small objects under stacks cut at the import (one native frame, the marker, the importer), its
// 1 MiB buffer (64 KiB or more) under its whole stack; the leak served after the import keeps its
// whole stack too.
TEST_P(PythonFrames, ImportTimeTablesAreStartupNamedByTheLineThatImports) {
  nlohmann::json report = serve("after_import");
  std::string importer = "serve_after_import:" + std::to_string(marker_line("python_app/service.py", "import_line"));
  std::string embeddings_line = "<module>:" + std::to_string(marker_line("python_app/startup_tables.py", "embeddings"));
  int64_t cut_blocks = 0;
  const nlohmann::json* embeddings = nullptr;
  for (const auto& site : report["sites"]) {
    const auto& frames = site["frames"];
    std::vector<std::string> python = python_frames(site);
    size_t native_before = 0;  // frames of their own (an inlined call shares its caller's)
    for (const auto& frame : frames) {
      const auto& function = frame["function"];
      if (function.is_string() && function.get<std::string>().starts_with("[import;")) {
        if (python.empty() || python.front() != importer) break;  // another import: the service's own
        EXPECT_EQ(native_before, 1u) << site.dump().substr(0, 1500);
        EXPECT_EQ(site["verdict"], "startup") << site["reason"];
        cut_blocks += site["live_blocks"].get<int64_t>();
        break;
      }
      native_before += frame["inlined"] == false ? 1 : 0;
    }
    if (!python.empty() && python.front() == embeddings_line && site["live_bytes"].get<int64_t>() >= (1 << 20)) {
      embeddings = &site;
    }
  }
  EXPECT_GE(cut_blocks, 5000) << "the vocabulary's 5000 words, each a string object";
  ASSERT_NE(embeddings, nullptr) << report["sites"].dump().substr(0, 3000);
  EXPECT_EQ((*embeddings)["verdict"], "startup") << (*embeddings)["reason"];
  std::vector<std::string> whole = python_frames(*embeddings);
  EXPECT_NE(std::find(whole.begin(), whole.end(), importer), whole.end()) << "its whole stack, through the import";

  Found leak = sites_named(report, "remember_output");
  EXPECT_EQ(leak.blocks, 300 * 2 + 1);
  std::string loop = "serve_after_import:" + std::to_string(marker_line("python_app/service.py", "after_import_loop"));
  bool whole_leak_stack = false;
  for (const auto& site : leak.sites) {
    std::vector<std::string> frames = python_frames(site);
    whole_leak_stack |= frames.size() >= 3 && frames[2] == loop;
  }
  EXPECT_TRUE(whole_leak_stack);
}

// Objects that the evaluation loop makes itself (Debian's python3.11 makes an int sum there)
// in a module that another module imports keep the line that made them, the marker and the line
// that began the import: the frames in between, the import machinery's and the outer module's,
// are left out. The first few sums, made before the loop specializes the addition, go through a
// function of the interpreter instead.
TEST_P(PythonFrames, ObjectsTheEvaluationLoopMakesInANestedImportKeepTheirLineAndTheImporter) {
  nlohmann::json report = serve("after_nested_import");
  std::string made = "register_range:" + std::to_string(marker_line("python_app/model_registry/builtin_models.py", "model_id"));
  std::string importer =
      "serve_after_nested_import:" + std::to_string(marker_line("python_app/service.py", "nested_import_line"));
  int64_t blocks = 0;
  bool found = false;
  for (const auto& site : report["sites"]) {
    std::vector<std::string> frames = python_frames(site);
    if (frames.empty() || frames.front() != made || site["frames"][0]["language"] != "python") continue;
    found = true;
    // The line, the marker, then the service's own frames from the importer out.
    ASSERT_GE(frames.size(), 2u);
    EXPECT_EQ(frames[1], importer) << site.dump().substr(0, 1500);
    const auto& stack = site["frames"];
    EXPECT_TRUE(stack[1]["function"].get<std::string>().starts_with("[import;")) << site.dump().substr(0, 1500);
    for (size_t i = 2; i < stack.size(); ++i) {
      if (stack[i]["language"] != "python") continue;
      EXPECT_TRUE(stack[i]["file"].get<std::string>().ends_with("python_app/service.py")) << stack[i].dump();
    }
    EXPECT_EQ(site["verdict"], "startup") << site["reason"];
    blocks += site["live_blocks"].get<int64_t>();
  }
  if (!found && GetParam().name != "Debian311") {
    GTEST_SKIP() << GetParam().path << " makes its ints in a function the evaluation loop calls";
  }
  EXPECT_TRUE(found) << "Debian's python3.11 makes the sum in its evaluation loop";
  EXPECT_GE(blocks, 3990);
  EXPECT_LE(blocks, 4000);
}

// An import begun 300 calls deep whose module builds a table 500 calls deeper: the frames span
// several chunks of the interpreter's frame stack, where a frame below another in the same chunk
// is known to be its caller and one in another chunk is found by following the chain. What the
// import makes is cut at the import and named by the line that imports; a frame of the module
// kept before the cut (an object the evaluation loop makes itself) is followed by that line.
TEST_P(PythonFrames, TablesOfAnImportBegunAndBuiltDeepAreNamedByTheLineThatImports) {
  nlohmann::json report = serve("after_deep_import");
  // 3.10's code objects have no qualified name.
  std::string importer = std::string(GetParam().minor >= 11 ? "serve_after_deep_import.<locals>." : "") + "load:" +
                         std::to_string(marker_line("python_app/service.py", "deep_import_line"));
  int64_t named = 0;
  for (const auto& site : report["sites"]) {
    const auto& frames = site["frames"];
    size_t marker = frames.size();
    for (size_t i = 0; i < frames.size() && marker == frames.size(); ++i) {
      const auto& function = frames[i]["function"];
      if (function.is_string() && function.get<std::string>().starts_with("[import;")) marker = i;
    }
    if (marker == frames.size()) continue;
    std::vector<std::string> outward;  // the Python frames after the marker
    for (size_t i = marker + 1; i < frames.size(); ++i) {
      if (frames[i]["language"] == "python") {
        outward.push_back(frames[i]["function"].get<std::string>() + ":" + std::to_string(frames[i]["line"].get<int>()));
      }
    }
    bool in_module = false;
    for (size_t i = 0; i < marker; ++i) {
      in_module |= frames[i]["language"] == "python" && frames[i]["file"].get<std::string>().ends_with("deep_tables.py");
    }
    if (in_module) EXPECT_FALSE(outward.empty()) << site.dump().substr(0, 1500);
    if (in_module && !outward.empty()) EXPECT_EQ(outward.front(), importer) << site.dump().substr(0, 1500);
    if (!outward.empty() && outward.front() == importer) named += site["live_blocks"].get<int64_t>();
  }
  EXPECT_GE(named, 3000 + 2000) << "the deep and the shallow words, named by the line that imports";
}

TEST_P(PythonFrames, LeakOfSmallObjectsIsFoundAtItsLine) {
  nlohmann::json report = serve("small");
  Found found = sites_named(report, "fill_cache");
  // 300 x 100 keys of a few dozen bytes each (pymalloc's size), kept in one dict.
  EXPECT_GE(found.blocks, 300 * 100);
  EXPECT_LT(found.blocks, 300 * 100 + 100);
  int line = marker_line("python_app/leaky_module.py", "fill_cache");
  int64_t at_line = 0;
  for (const auto& site : found.sites) {
    if (site["first_user_frame"]["line"] == line) at_line += site["live_blocks"].get<int64_t>();
  }
  EXPECT_GE(at_line, 300 * 100);
}

TEST_P(PythonFrames, LeakOnANamedThreadIsThatThreadsByName) {
  nlohmann::json report = serve("thread");
  Found found = sites_named(report, "remember_output");
  ASSERT_FALSE(found.sites.empty());
  for (const auto& site : found.sites) {
    ASSERT_EQ(site["threads"].size(), 1u) << site["threads"].dump();
    EXPECT_EQ(site["threads"][0]["name"], "ingest-worker");
  }
}

TEST_P(PythonFrames, LeakInsideATaskIsTheTasks) {
  nlohmann::json report = serve("task");
  Found found = sites_named(report, "remember_output");
  ASSERT_FALSE(found.sites.empty());
  for (const auto& site : found.sites) {
    ASSERT_EQ(site["tasks"].size(), 1u) << site["tasks"].dump();
    EXPECT_EQ(site["tasks"][0]["name"], "request");
  }
  // Entering and leaving a task keeps nothing: no block stays at the `with` line.
  int line = marker_line("python_app/service.py", "task_line");
  std::string at_line = "serve_in_tasks:" + std::to_string(line);
  for (const auto& site : dump(file_)["sites"]) {
    std::vector<std::string> frames = python_frames(site);
    EXPECT_TRUE(frames.empty() || frames[0] != at_line) << site.dump().substr(0, 1500);
  }
}

TEST_P(PythonFrames, CExtensionBetweenKeepsItsNativeFrames) {
  nlohmann::json report = serve("compressor");
  Found found = sites_named(report, "make_compressor");
  EXPECT_GE(found.bytes, 50 * 256 * 1024) << "zlib's deflate state of 50 compressors";
  bool through_zlib = false;
  for (const auto& site : found.sites) {
    for (const auto& frame : site["frames"]) {
      if (frame["language"] == "python") break;  // the frames above the Python one
      through_zlib |= frame["module"].get<std::string>().find("libz.so") != std::string::npos;
    }
  }
  EXPECT_TRUE(through_zlib) << "deflateInit's frames in libz above make_compressor";
}

TEST_P(PythonFrames, TwoHundredThreadsAndAForkedWorkerRunCleanWithRightFrames) {
  std::string directory = scratch_dir();
  nlohmann::json report = serve("threads_and_fork", "run.lsc");
  EXPECT_EQ(last_out_, "worker kept 300 exit 0\ndone\n");
  int line = marker_line("python_app/service.py", "short_job");
  Found jobs = sites_named(report, "short_job");
  EXPECT_EQ(jobs.blocks, 200 * 2 + 1) << "each thread's bytearray and its buffer, and the list that keeps them";
  for (const auto& site : jobs.sites) EXPECT_EQ(site["first_user_frame"]["line"], line);
  // The forked worker's own stream: the 100 jobs it ran, at the same line, below forked_worker.
  int children = 0;
  for (const std::string& name : files_in(std::filesystem::path(file_).parent_path().string())) {
    if (name == "run.lsc") continue;
    ++children;
    Outcome child = leakscope({"report", "--format", "json", "--top", "1000",
                               (std::filesystem::path(file_).parent_path() / name).string()});
    ASSERT_EQ(child.exit_code, 0) << child.err;
    nlohmann::json child_report = nlohmann::json::parse(child.out);
    bool under_worker = false;
    for (const auto& site : sites_named(child_report, "short_job").sites) {
      EXPECT_EQ(site["first_user_frame"]["line"], line);
      std::vector<std::string> frames = python_frames(site);
      under_worker |= frames.size() >= 2 && frames[1].rfind("forked_worker:", 0) == 0;
    }
    EXPECT_TRUE(under_worker) << name;
  }
  EXPECT_EQ(children, 1);
}

TEST_P(PythonFrames, SubinterpreterCodeIsNamedByItsOwnFramesOnly) {
  nlohmann::json report = serve("subinterpreter");
  Found kept = sites_named(report, "keep_in_subinterpreter");
  EXPECT_GE(kept.blocks, 50);
  bool buffers = false;
  for (const auto& site : kept.sites) {
    // The subinterpreter's frames, never the main interpreter's code that waits below them.
    for (const auto& frame : site["frames"]) {
      if (frame["language"] == "python") EXPECT_EQ(frame["file"], "<string>") << frame.dump();
    }
    buffers |= site["live_blocks"] == 50 && site["live_bytes"].get<int64_t>() >= 50 * 30000;
  }
  EXPECT_TRUE(buffers) << "the 50 buffers of 30 000 bytes";
  // The main interpreter's frames are read as before once the subinterpreter has run.
  Found after = sites_named(report, "remember_output");
  EXPECT_GE(after.bytes, 20000) << "the buffer handle(0) keeps";
}

// In exact mode the arenas are not counted again (their objects are): what else the interpreter maps
// through its arena allocator, its frames' data stack (3.11+), is named as such, the runtime's own.
TEST_P(PythonFrames, AnExactRunNamesTheFrameStackAndNoArenas) {
  nlohmann::json parsed = run_script("kept = [dict(a=i) for i in range(10000)]\nprint(len(kept))\n");
  ASSERT_EQ(last_out_, "10000\n");
  for (const auto& group : parsed["groups"]) {
    if (group["frame"].is_null()) continue;
    EXPECT_NE(group["frame"]["function"], "[the interpreter's arenas for small objects]") << group.dump().substr(0, 800);
    if (group["frame"]["function"] == "[the interpreter's stack of frames]") EXPECT_FALSE(group["runtime"].is_null());
  }
}

// Small objects in exact mode: pymalloc keeps serving them (the interpreter's own allocator, the
// process laid out as it is untraced) and each one is recorded at its line, under -I too, which
// ignores the environment.
TEST_P(PythonFrames, SmallObjectsAreRecordedOneByOneWhilePymallocServesThem) {
  const char* script =
      "import os, sys\n"
      "def keep_strings(count):\n"
      "    kept = []\n"
      "    for i in range(count):\n"
      "        kept.append(str(i) * 3)\n"
      "    return kept\n"
      "kept = keep_strings(20000)\n"
      "print(os.environ.get('PYTHONMALLOC'), sys.getallocatedblocks() > 0)\n";
  nlohmann::json report = run_script(script, {"-I"});
  EXPECT_EQ(last_out_, "None True\n") << "PYTHONMALLOC unset, pymalloc's blocks in use";
  Found found = sites_named(report, "keep_strings");
  // The 20 000 strings and the list's array of items; the list object itself is new unless the
  // interpreter reuses one from its free list.
  EXPECT_GE(found.blocks, 20000 + 1);
  EXPECT_LE(found.blocks, 20000 + 2);
}

// Small objects are recorded through a queue the writer applies (docs/RUNTIME.md): blocks resized
// in place or moved, and whole arenas given back while their blocks' frees wait in the queue and
// then mapped again for others, still end exactly where they should.
TEST_P(PythonFrames, SmallObjectsResizedAndInArenasGivenBackAndMappedAgainStayExact) {
  const char* script =
      "def churn():\n"
      "    junk = [str(i) * 3 for i in range(300000)]\n"
      "    del junk\n"
      "def keep_grown(count):\n"
      "    kept = []\n"
      "    for i in range(count):\n"
      "        grown = bytearray(8)\n"
      "        grown.extend(b'x' * 40)\n"
      "        kept.append(grown)\n"
      "    return kept\n"
      "def keep_more(count):\n"
      "    more = []\n"
      "    for i in range(count):\n"
      "        more.append(bytes(100))\n"
      "    return more\n"
      "import time\n"
      "churn()\n"
      "kept = keep_grown(5000)\n"
      "churn()\n"
      "time.sleep(0.5)  # not a shutdown: settled well before the end\n"
      "more = keep_more(1000)\n"
      "print(len(kept), sum(len(k) for k in kept))\n";
  nlohmann::json report = run_script(script);
  EXPECT_EQ(last_out_, "5000 240000\n");
  Found kept = sites_named(report, "keep_grown");
  // Each bytearray and its buffer, and the list's array of items (and the list, unless the
  // interpreter reused one from its free list).
  EXPECT_GE(kept.blocks, 2 * 5000 + 1) << report["sites"].dump();
  EXPECT_LE(kept.blocks, 2 * 5000 + 2);
  // Every buffer holds its 48 bytes and a terminating zero.
  EXPECT_GE(kept.bytes, 5000 * 49);
  // Made last, in arenas given back by the churn and mapped again: a bytes object of 100 bytes
  // is one block each.
  Found more = sites_named(report, "keep_more");
  EXPECT_GE(more.blocks, 1000 + 1);
  EXPECT_LE(more.blocks, 1000 + 2);
  Found churned = sites_named(report, "churn");
  EXPECT_EQ(churned.blocks, 0) << "the churned strings were all freed";
  EXPECT_EQ(churned.bytes, 0);
}

// The sitecustomize leakscope puts first on PYTHONPATH (thread names) runs the program's own after
// it (a site's configuration, coverage's start-up hook); where there is none, it imports no more of
// importlib than the interpreter does untraced.
TEST_P(PythonFrames, TheProgramsOwnSitecustomizeStillRunsAndNoneCostsNoMoreImports) {
  std::string directory = scratch_dir();
  std::ofstream(directory + "/sitecustomize.py") << "import builtins\nbuiltins.OWN_SITECUSTOMIZE = __file__\n";
  const char* script =
      "import builtins, sys\n"
      "print(getattr(builtins, 'OWN_SITECUSTOMIZE', 'not run'))\n";
  Outcome own = leakscope({"run", "-o", directory + "/own.lsc", "--", GetParam().path, "-c", script},
                          {{"PYTHONPATH", directory}});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, directory + "/sitecustomize.py\n");

  const char* probe =
      "import sys\n"
      "print('importlib.util' in sys.modules, getattr(sys.modules.get('sitecustomize'), '__file__', None))\n";
  Outcome untraced = run_program({GetParam().path, "-c", probe});
  ASSERT_EQ(untraced.exit_code, 0) << untraced.err;
  // Debian's interpreter has a sitecustomize of its own, which is run as the one above is.
  if (untraced.out.find(" None") == std::string::npos) return;
  Outcome traced = leakscope({"run", "-o", directory + "/none.lsc", "--", GetParam().path, "-c", probe});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out.substr(0, traced.out.find(' ')), untraced.out.substr(0, untraced.out.find(' ')))
      << "untraced: " << untraced.out << "traced: " << traced.out;
}

// CPython 3.12+ warns at a fork that a process with more than one thread may deadlock in the
// child, counting leakscope's writer thread too: a program of one thread must not be told so (with
// -W error its fork would raise), and one with a thread of its own is, as untraced.
TEST_P(PythonFrames, AForkWarnsOfThreadsOnlyWhenTheProgramHasThreadsOfItsOwn) {
  if (GetParam().minor < 12) GTEST_SKIP() << "CPython 3." << GetParam().minor << " does not warn at a fork";
  const char* script =
      "import os, threading, time, warnings\n"
      "def os_threads():\n"
      "    with open('/proc/self/stat', 'rb') as stat:\n"
      "        return int(stat.read().rsplit(b')', 1)[1].split()[17])\n"
      "def fork_once():\n"
      "    with warnings.catch_warnings(record=True) as caught:\n"
      "        warnings.simplefilter('always')\n"
      "        pid = os.fork()\n"
      "        if pid == 0:\n"
      "            os._exit(0)\n"
      "        os.waitpid(pid, 0)\n"
      "    return sum('multi-threaded' in str(w.message) for w in caught)\n"
      "alone = os_threads()\n"
      "print('alone', fork_once())\n"
      "worker = threading.Thread(target=time.sleep, args=(0.5,))\n"
      "worker.start()\n"
      "print('with a thread', fork_once())\n"
      "worker.join()\n"
      "# join() returns before the thread is gone from the kernel's count, which the warning reads\n"
      "deadline = time.time() + 5\n"
      "while os_threads() > alone and time.time() < deadline:\n"
      "    time.sleep(0.01)\n"
      "print('alone again', fork_once())\n";
  run_script(script);
  EXPECT_EQ(last_out_, "alone 0\nwith a thread 1\nalone again 0\n");
}

// A dict handed out again from CPython's free list, whose memory a temporary dict at another line
// allocated, is recorded where it is made (3.13's reference tracer; before it, the line of the
// temporary, docs/PYTHON.md).
TEST_P(PythonFrames, AnObjectFromAFreeListIsRecordedWhereItIsMade) {
  if (GetParam().minor < 13) GTEST_SKIP() << "CPython 3." << GetParam().minor << " does not say when it reuses an object";
  const char* script =
      "import time\n"
      "LOG = []\n"
      "def parse(line):\n"
      "    fields = dict(enumerate(line.split(',')))\n"
      "    return len(fields)\n"
      "def handle(i):\n"
      "    parse('a,b,c')\n"
      "    LOG.append({'id': i})\n"
      "for i in range(20000):\n"
      "    handle(i)\n"
      "    if i % 1000 == 0:\n"
      "        time.sleep(0.02)\n";
  nlohmann::json parsed = run_script(script);
  // Each kept dict and its table of keys at the line that makes them, nothing of them at parse; but
  // a table of keys is no object, and those the interpreter hands out again from its free list of
  // them (80 at most) stay where they were made.
  EXPECT_GE(sites_named(parsed, "handle").blocks, 2 * 20000 - 80);
  EXPECT_LT(sites_named(parsed, "parse").blocks, 100);
}

// A bounded lru_cache of tuples: each result evicted goes to CPython's free list of tuples of its
// length (up to 2000 kept), which never hands it out again here, as tuple() of a generator grows its
// tuple by resizing. Those are the interpreter's, not the line's: the cached function holds exactly
// the 256 tuples the cache keeps, judged a cache, and the gate passes the program.
TEST_P(PythonFrames, TuplesOnTheInterpretersFreeListAreNotTheLineThatMadeThem) {
  const char* script =
      "import functools, time\n"
      "@functools.lru_cache(maxsize=256)\n"
      "def tokenize(text):\n"
      "    return tuple(word.upper() for word in text.split())\n"
      "def serve(count):\n"
      "    for i in range(count):\n"
      "        tokenize(' '.join(str(i * 16 + k) for k in range(16)))\n"
      "        if i % 100 == 0:\n"
      "            time.sleep(0.02)\n"
      "serve(4000)\n"
      "print(tokenize.cache_info().currsize)\n";
  nlohmann::json parsed = run_script(script);
  ASSERT_EQ(last_out_, "256\n");
  // The line's tuples, grown by _PyTuple_Resize (its other blocks are the interpreter's cached
  // one-character strings, and in 3.13 a list its free list of lists kept). The interpreter's first
  // calls take another path to them (a site of their own): its few tuples, made at the start and
  // let go of in the shutdown before the exit mark, are taken as they were there (each site at its
  // largest since the shutdown began), beside the 256 the cache holds at the mark. Neither is a leak.
  int64_t cached_tuples = 0, other_path_tuples = 0;
  for (const auto& site : sites_named(parsed, "tokenize").sites) {
    bool tuples = std::any_of(site["frames"].begin(), site["frames"].end(),
                              [](const nlohmann::json& frame) { return frame["function"] == "_PyTuple_Resize"; });
    if (!tuples) continue;
    EXPECT_NE(site["verdict"], "leak") << site.dump();
    if (site["verdict"] == "cache") {
      cached_tuples += site["live_blocks"].get<int64_t>();
    } else {
      other_path_tuples += site["live_blocks"].get<int64_t>();
    }
  }
  EXPECT_EQ(cached_tuples, 256) << parsed.dump();
  EXPECT_LE(other_path_tuples, 16) << parsed.dump();
  // The interpreter's last garbage collection, made just before the mark, empties its free lists:
  // their stock is seen at the snapshot before it.
  ASSERT_FALSE(parsed["collection_snapshot"].is_null()) << parsed.dump();
  Outcome before = leakscope({"report", "--format", "json", "--top", "1000", "--at",
                              std::to_string(parsed["collection_snapshot"].get<int>()), file_});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  const nlohmann::json before_collection = nlohmann::json::parse(before.out);
  int64_t kept_blocks = 0;
  for (const auto& group : before_collection["groups"]) {
    if (group["frame"].is_null() || group["frame"]["function"] != "[kept on the interpreter's free lists]") continue;
    EXPECT_FALSE(group["runtime"].is_null()) << group.dump();
    EXPECT_EQ(group["verdict"], "cache") << group.dump();
    kept_blocks += group["live_blocks"].get<int64_t>();
  }
  EXPECT_GE(kept_blocks, 2000 - 256) << "the evicted tuples of 16 items, up to the free list's 2000";
  Outcome gate = leakscope({"check", file_});
  EXPECT_EQ(gate.exit_code, 0) << gate.out << gate.err;
}

// Tuples the interpreter hands out again from its free list and the program keeps are a leak, not
// the free list's stock: each kept pair here is the temporary pair `work` let go of a moment
// before. CPython 3.13 says where it hands one out (the pair is then `record`'s); before it, the
// pair is found in use again by the next snapshot and goes back to where it was made.
TEST_P(PythonFrames, TuplesTheInterpreterHandsOutAgainAndTheProgramKeepsAreALeak) {
  const char* script =
      "import time\n"
      "KEPT = []\n"
      "def work(i):\n"
      "    pair = (i, i + 1)\n"
      "    return pair[0] + pair[1]\n"
      "def record(i):\n"
      "    KEPT.append((i, -i))\n"
      "for i in range(30000):\n"
      "    work(i)\n"
      "    record(i)\n"
      "    if i % 1000 == 0:\n"
      "        time.sleep(0.02)\n"
      "print(len(KEPT))\n";
  nlohmann::json parsed = run_script(script);
  ASSERT_EQ(last_out_, "30000\n");
  int64_t leaked_blocks = 0, kept_blocks = 0;
  for (const auto& group : parsed["groups"]) {
    if (group["verdict"] == "leak") leaked_blocks += group["live_blocks"].get<int64_t>();
    if (!group["frame"].is_null() && group["frame"]["function"] == "[kept on the interpreter's free lists]") {
      kept_blocks += group["live_blocks"].get<int64_t>();
    }
  }
  // Each iteration keeps a pair and two integers past the small ones the interpreter shares.
  EXPECT_GE(leaked_blocks, 3 * 30000 - 600) << parsed["groups"].dump();
  EXPECT_LT(kept_blocks, 2000) << "what the free lists hold, not what the program keeps";
  Outcome gate = leakscope({"check", file_});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
}

// expect_requests_in_their_tasks() runs the asyncio front end on `python` with event loop `loop`
// and checks that each request's allocations went to its own task, nested ones too.
void expect_requests_in_their_tasks(const std::string& python, const std::string& loop) {
  const std::string file = scratch_dir() + "/front_end.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", python, fixture_source("asyncio_front_end.py"), "200", loop});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out, "200 200\n");
  EXPECT_EQ(run.err.find("ended out of order"), std::string::npos) << run.err;
  Outcome report = leakscope({"report", "--format", "json", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json parsed = nlohmann::json::parse(report.out);
  std::map<std::string, int64_t> held;
  for (const auto& owner : parsed["by_task"]) {
    if (!owner["name"].is_null()) held[owner["name"].get<std::string>()] = owner["live_bytes"].get<int64_t>();
  }
  // Each request keeps bytes(2048) (2 081 bytes) in generate and bytes(100) (133) in tokenize; the
  // dict and the list they go into grow as they do.
  EXPECT_GE(held["generate"], 200 * 2081) << report.out;
  EXPECT_LT(held["generate"], 200 * 2081 + 32 * 1024) << report.out;
  EXPECT_GE(held["tokenize"], 200 * 133) << report.out;
  EXPECT_LT(held["tokenize"], 200 * 133 + 8 * 1024) << report.out;
  // A health check keeps nothing: what it holds is what checks had in flight where the run is
  // judged (each site at its largest since a shutdown began, docs/ANALYSIS.md), at most the four
  // clients' four buffers of 4 097 bytes, and tuples kept on the interpreter's free lists.
  EXPECT_LT(held["health"], 4 * 4 * 4097 + 1024) << report.out;
}

// With small objects unrecorded (python_malloc=0, as in sampled mode), a leak of small dicts shows
// as pymalloc's arenas growing: at their own marker, not at whatever line opened each arena (a
// temporary list's line took most of them before).
TEST_P(PythonFrames, ArenasOfUnrecordedSmallObjectsAreTheirOwnGroup) {
  const char* script =
      "import time\n"
      "KEPT = []\n"
      "def scratch(i):\n"
      "    return [str(j) for j in range(40)]\n"
      "def remember(i):\n"
      "    KEPT.append({'id': i, 'name': 'n%d' % i})\n"
      "for i in range(40000):\n"
      "    scratch(i)\n"
      "    remember(i)\n"
      "    if i % 4000 == 0:\n"
      "        time.sleep(0.05)\n"
      "print(len(KEPT))\n";
  file_ = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "--option", "python_malloc=0", "-o", file_, "--", GetParam().path, "-c", script});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out, "40000\n");
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file_});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json parsed = nlohmann::json::parse(report.out);
  int64_t arenas = 0, elsewhere = 0;
  for (const auto& group : parsed["groups"]) {
    for (const auto& part : group["parts"]) {
      if (part["domain"] != "mmap") continue;
      bool marker = group["frame"]["function"] == "[the interpreter's arenas for small objects]";
      (marker ? arenas : elsewhere) += part["live_bytes"].get<int64_t>();
    }
  }
  // 40 000 dicts of two items and their strings: more than 8 MiB of 1 MiB arenas on 3.10-3.13.
  EXPECT_GE(arenas, 8 << 20) << report.out;
  EXPECT_LT(elsewhere, 1 << 20) << "no arena at a line of the script: " << report.out;
}

// An asyncio front end, its handlers each in a leakscope.task held across awaits while the other
// handlers run: each request's allocations go to its own task, on every interpreter. Under a task
// of the thread's, the tasks begun last took them (tokenize 440 KB, generate 13 KB).
TEST_P(PythonFrames, EachAsyncioTaskKeepsItsOwnLeakscopeTaskAcrossAwaits) {
  expect_requests_in_their_tasks(GetParam().path, "asyncio");
}

// The same on uvloop's event loop: with leakscope imported first, as a script does (its tasks all
// went to the tasks begun last before uvloop's loops were followed from their making), and with
// leakscope imported once the loop runs, as uvicorn runs a server and then imports its app.
TEST(PythonTasks, UvloopTasksKeepTheirOwnTasks) {
  expect_requests_in_their_tasks("/usr/bin/python3", "uvloop");
  expect_requests_in_their_tasks("/usr/bin/python3", "uvloop-app");
}

// by_task_of() runs `script` under /usr/bin/python3 and returns the live bytes of each task name
// its report gives, and the run's outcome.
std::map<std::string, int64_t> by_task_of(const char* script, Outcome* run) {
  const std::string file = scratch_dir() + "/tasks.lsc";
  *run = leakscope({"run", "-o", file, "--", "/usr/bin/python3", "-c", script});
  Outcome report = leakscope({"report", "--format", "json", file});
  std::map<std::string, int64_t> held;
  if (report.exit_code != 0) return held;
  const nlohmann::json parsed = nlohmann::json::parse(report.out);
  for (const auto& owner : parsed["by_task"]) {
    held[owner["name"].is_null() ? "" : owner["name"].get<std::string>()] = owner["live_bytes"].get<int64_t>();
  }
  return held;
}

// A pending task collected while another runs is closed there, its block's exit inside the other
// task's step: the running request keeps its task. (Its exit used to set the running context's
// task back to its own outer one, and the request's next 60 KB went to no task.)
TEST(PythonTasks, ACoroutineClosedByTheCollectorLeavesTheRunningTaskItsOwn) {
  const char* script =
      "import asyncio, gc, leakscope\n"
      "KEEP = []\n"
      "async def orphan():\n"
      "    with leakscope.task('orphan'):\n"
      "        await asyncio.get_running_loop().create_future()\n"
      "async def request():\n"
      "    with leakscope.task('request', 1):\n"
      "        KEEP.append(bytes(10000))\n"
      "        gc.collect()\n"
      "        KEEP.append(bytes(20000))\n"
      "        await asyncio.sleep(0)\n"
      "        KEEP.append(bytes(40000))\n"
      "    leakscope.snapshot_now()\n"
      "async def main():\n"
      "    asyncio.get_running_loop().create_task(orphan())\n"
      "    await asyncio.sleep(0.01)\n"
      "    await asyncio.get_running_loop().create_task(request())\n"
      "asyncio.run(main())\n";
  Outcome run;
  std::map<std::string, int64_t> held = by_task_of(script, &run);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GE(held["request"], 70000 + 3 * 33) << "three bytes objects";
  EXPECT_LT(held["request"], 70000 + 4096);
}

// A coroutine that forks goes on in both processes as untraced, and a task made in debug mode
// says it was made where the program made it, not in leakscope.
TEST(PythonTasks, AForkInACoroutineAndDebugModeBehaveAsUntraced) {
  const char* forks =
      "import asyncio, os, leakscope\n"
      "async def main():\n"
      "    with leakscope.task('work'):\n"
      "        await asyncio.sleep(0)\n"
      "        pid = os.fork()\n"
      "        if pid == 0:\n"
      "            return 'child'\n"
      "        os.waitpid(pid, 0)\n"
      "        return 'parent'\n"
      "print(asyncio.run(main()), 'done', flush=True)\n";
  Outcome run;
  by_task_of(forks, &run);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("child done\n"), std::string::npos) << run.out << run.err;
  EXPECT_NE(run.out.find("parent done\n"), std::string::npos) << run.out << run.err;
  EXPECT_EQ(run.err.find("Traceback"), std::string::npos) << run.err;
  const char* debug =
      "import asyncio, leakscope\n"
      "async def work():\n"
      "    return 1\n"
      "async def main():\n"
      "    task = asyncio.get_running_loop().create_task(work())\n"
      "    print(task._source_traceback[-1].name, task._source_traceback[-1].lineno)\n"
      "    await task\n"
      "asyncio.run(main(), debug=True)\n";
  by_task_of(debug, &run);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "main 5\n");
}

// A task begun in an asyncio task made before `import leakscope` is its thread's: coroutines that
// each hold one across an await end them out of order, which is said once; tasks that nest, as a
// thread's do, are not.
TEST(PythonTasks, TasksOfAsyncioTasksMadeBeforeTheImportAreTheThreadsAndSaidOnce) {
  const char* interleaved =
      "import asyncio\n"
      "async def connection(n):\n"
      "    import leakscope\n"
      "    with leakscope.task('conn', n):\n"
      "        await asyncio.sleep(0.01 * (n + 1))\n"
      "async def main():\n"
      "    await asyncio.gather(*(connection(n) for n in range(4)))\n"
      "asyncio.run(main())\n";
  Outcome run = leakscope({"run", "-o", scratch_dir() + "/a.lsc", "--", "/usr/bin/python3", "-c", interleaved});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string warning = "leakscope: warning: tasks of one thread ended out of order";
  size_t said = run.err.find(warning);
  EXPECT_NE(said, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(warning, said + 1), std::string::npos) << "said once: " << run.err;
  const char* nested =
      "import leakscope\n"
      "kept = []\n"
      "for request in range(20):\n"
      "    with leakscope.task('request', request):\n"
      "        with leakscope.task('parse'):\n"
      "            kept.append(bytearray(100))\n";
  Outcome plain = leakscope({"run", "-o", scratch_dir() + "/n.lsc", "--", "/usr/bin/python3", "-c", nested});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find(warning), std::string::npos) << plain.err;
}

// A diff of two runs of a Python service names each changed site by its Python line, not only by
// the interpreter's function that allocated.
TEST(PythonDiff, ChangedSitesAreNamedByTheirPythonLine) {
  std::string directory = scratch_dir();
  const char* script =
      "import sys\n"
      "def keep_strings(count):\n"
      "    return [str(i) * 3 for i in range(count)]\n"
      "kept = keep_strings(int(sys.argv[1]))\n";
  for (const char* count : {"1000", "20000"}) {
    Outcome run = leakscope({"run", "-o", directory + "/" + count + ".lsc", "--", "/usr/bin/python3", "-c", script, count});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  Outcome diff = leakscope({"diff", directory + "/1000.lsc", directory + "/20000.lsc"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  // keep_strings, or its comprehension's own frame (keep_strings.<locals>.<listcomp> before 3.12).
  EXPECT_NE(diff.out.find("              in keep_strings"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find(" (<string>:3) [python]\n"), std::string::npos) << diff.out;
}

// How the traced interpreter allocates, as it says itself: pymalloc, recorded through it, in
// exact mode; pymalloc unrecorded in sampled mode and with python_malloc=0; the allocator the user
// chose kept (PYTHONMALLOC, development mode's debug one), with a line saying what is unrecorded.
TEST(PythonMalloc, ExactModeKeepsPymallocAndTheUsersSettingIsKept) {
  std::string file = scratch_dir() + "/run.lsc";
  auto seen = [&](const std::vector<std::string>& options, const std::map<std::string, std::string>& env,
                  const std::vector<std::string>& python_options = {}) {
    std::vector<std::string> args{"run", "-o", file};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "/usr/bin/python3"});
    args.insert(args.end(), python_options.begin(), python_options.end());
    for (const char* word : {"-c", "import os, sys; print(os.environ.get('PYTHONMALLOC'), sys.getallocatedblocks() > 0)"}) {
      args.push_back(word);
    }
    std::filesystem::remove(file);
    Outcome run = leakscope(args, env);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    bool said = run.err.find("not recorded one by one") != std::string::npos;
    return run.out + (said ? "said unrecorded\n" : "");
  };
  EXPECT_EQ(seen({}, {}), "None True\n");
  EXPECT_EQ(seen({"--sample", "512KiB"}, {}), "None True\n");
  EXPECT_EQ(seen({"--option", "python_malloc=0"}, {}), "None True\n");
  EXPECT_EQ(seen({}, {{"PYTHONMALLOC", "pymalloc"}}), "pymalloc True\nsaid unrecorded\n");
  EXPECT_EQ(seen({}, {{"PYTHONMALLOC", "malloc"}}), "malloc False\n");
  EXPECT_EQ(seen({}, {}, {"-X", "dev"}), "None True\nsaid unrecorded\n");
  EXPECT_EQ(seen({}, {{"PYTHONDEVMODE", "1"}}), "None True\nsaid unrecorded\n");
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonFrames, ::testing::ValuesIn(python_interpreters()),
                         [](const ::testing::TestParamInfo<PythonInterpreter>& info) { return info.param.name; });

}  // namespace
}  // namespace leakscope::testing
