// Start-up stacks: a block under 64 KiB allocated before main or inside dlopen keeps its innermost
// frame and a marker saying which (imports: python_frames_test.cc), so that a framework's static
// registrations, a call site each, make one site instead of one per call; every block is still
// counted, larger blocks keep their whole stacks, and startup_depth=0 keeps them all whole.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace leakscope::testing {
namespace {

constexpr int64_t kOperators = 1000;       // 48 bytes each, before main
constexpr int64_t kPluginOperators = 500;  // 64 bytes each, inside dlopen
constexpr int64_t kRequests = 400;

std::string function_of(const nlohmann::json& frame) {
  return frame["function"].is_string() ? frame["function"].get<std::string>() : "";
}

// sites_from() lists the live sites whose innermost frame's function contains `text`.
std::vector<nlohmann::json> sites_from(const nlohmann::json& document, const std::string& text) {
  std::vector<nlohmann::json> found;
  for (const auto& site : document["sites"]) {
    if (!site["frames"].empty() && function_of(site["frames"][0]).find(text) != std::string::npos) found.push_back(site);
  }
  return found;
}

// in_plugin() tells whether a site's innermost frame is the plugin's code.
bool in_plugin(const nlohmann::json& site) {
  return !site["frames"].empty() && site["frames"][0]["module"].is_string() &&
         site["frames"][0]["module"].get<std::string>().find("libfixture_registry_plugin") != std::string::npos;
}

bool has_frame(const nlohmann::json& site, const std::string& text) {
  for (const auto& frame : site["frames"]) {
    if (function_of(frame).find(text) != std::string::npos) return true;
  }
  return false;
}

std::string run_registry(const std::vector<std::string>& options) {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> command{"run", "-o", file};
  command.insert(command.end(), options.begin(), options.end());
  command.insert(command.end(), {"--", fixture("static_registry"), fixture("libfixture_registry_plugin.so"),
                                 std::to_string(kRequests)});
  Outcome run = leakscope(command);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "operators=1000 plugin_operators=500 requests=400\n");
  return file;
}

TEST(StartupStacks, RegistrationsBeforeMainAndInDlopenShareCutStacksAndAreCountedExactly) {
  std::string file = run_registry({});
  nlohmann::json state = dump(file, {"--top", "100000"});

  std::vector<nlohmann::json> registrations = sites_from(state, "Registration(int)");
  ASSERT_EQ(registrations.size(), 2u) << "one site for the program's, one for the plugin's";
  for (const auto& site : registrations) {
    ASSERT_GE(site["frames"].size(), 2u) << site["frames"].dump(1);
    EXPECT_EQ(site["frames"][0]["inlined"], false);
    std::string marker = function_of(site["frames"][1]);
    if (in_plugin(site)) {
      EXPECT_EQ(marker.rfind("[in dlopen", 0), 0u) << marker;
      // After the marker, the program's code that called dlopen.
      ASSERT_GE(site["frames"].size(), 3u) << site["frames"].dump(1);
      EXPECT_EQ(function_of(site["frames"][2]), "main") << site["frames"].dump(1);
      EXPECT_EQ(site["live_blocks"], kPluginOperators);
      EXPECT_EQ(site["live_bytes"], kPluginOperators * 64);
    } else {
      EXPECT_EQ(site["frames"].size(), 2u) << site["frames"].dump(1);
      EXPECT_EQ(marker.rfind("[before main", 0), 0u) << marker;
      EXPECT_EQ(site["live_blocks"], kOperators);
      EXPECT_EQ(site["live_bytes"], kOperators * 48);
    }
  }

  // The vocabulary (1 MiB, a static initializer's) keeps its whole stack, named by its loader.
  bool vocabulary = false;
  for (const auto& site : state["sites"]) {
    if (site["live_bytes"] != (1 << 20)) continue;
    vocabulary = true;
    EXPECT_TRUE(has_frame(site, "load_vocabulary")) << site["frames"].dump(1);
    EXPECT_FALSE(has_frame(site, "[before main")) << site["frames"].dump(1);
  }
  EXPECT_TRUE(vocabulary);

  // What main does afterwards keeps its whole stack.
  bool requests = false;
  for (const auto& site : state["sites"]) {
    if (!has_frame(site, "remember_request")) continue;
    requests = true;
    EXPECT_TRUE(has_frame(site, "main")) << site["frames"].dump(1);
    EXPECT_FALSE(has_frame(site, "[before main") || has_frame(site, "[in dlopen")) << site["frames"].dump(1);
  }
  EXPECT_TRUE(requests);

  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json judged = nlohmann::json::parse(report.out);
  EXPECT_GE(judged["startup_stacks"]["stacks"].get<int64_t>(), 2);
  EXPECT_EQ(judged["startup_stacks"]["kept_frames"], 1);
  int judged_registrations = 0;
  for (const auto& site : judged["sites"]) {
    if (site["frames"].empty() || function_of(site["frames"][0]).find("Registration(int)") == std::string::npos) {
      continue;
    }
    ++judged_registrations;
    EXPECT_EQ(site["verdict"], "startup") << site["reason"];
    // What runs before main is start-up by what made it; a library loaded once, early, by its trend.
    if (!in_plugin(site)) EXPECT_NE(site["reason"].get<std::string>().find("before main"), std::string::npos) << site["reason"];
  }
  EXPECT_EQ(judged_registrations, 2);
  bool leak = false;
  for (const auto& group : judged["groups"]) {
    const auto& frame = group["first_user_frame"];
    if (!frame.is_object() || function_of(frame).find("remember_request") == std::string::npos) continue;
    leak = true;
    EXPECT_EQ(group["verdict"], "leak") << group["reason"];
  }
  EXPECT_TRUE(leak);
  Outcome text = leakscope({"report", file});
  EXPECT_NE(text.out.find("start-up: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(startup_depth=0 keeps them whole)"), std::string::npos) << text.out;
}

// A plugin reloaded again and again whose constructor keeps a block each load leaks: library
// initializers run once per load, so they are judged by their trend, not called start-up.
TEST(StartupStacks, PluginReloadedAgainAndAgainLeaksFromItsInitializer) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("plugin_reloads"), fixture("libfixture_reload_plugin.so"), "60"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "reloads=60\n");
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json judged = nlohmann::json::parse(report.out);
  int64_t leaked_blocks = 0;
  for (const auto& group : judged["groups"]) {
    const auto& frame = group["first_user_frame"];
    if (!frame.is_object() || function_of(frame) != "plugin_init") continue;
    EXPECT_EQ(group["verdict"], "leak") << group["reason"];
    EXPECT_GT(group["growth_bytes_per_min"].get<double>(), 0) << group.dump().substr(0, 1500);
    for (const auto& part : group["parts"]) leaked_blocks += part["live_blocks"].get<int64_t>();
  }
  EXPECT_EQ(leaked_blocks, 60);
  bool caller_named = false;
  for (const auto& site : judged["sites"]) {
    if (!has_frame(site, "plugin_init")) continue;
    EXPECT_TRUE(has_frame(site, "[in dlopen")) << site["frames"].dump(1);
    caller_named |= has_frame(site, "main");
  }
  EXPECT_TRUE(caller_named) << "the code that called dlopen follows the marker";
}

TEST(StartupStacks, StartupDepthZeroKeepsEveryRegistrationsStackWhole) {
  std::string file = run_registry({"--option", "startup_depth=0"});
  nlohmann::json state = dump(file, {"--top", "100000"});
  int64_t program = 0, plugin = 0;
  for (const auto& site : state["sites"]) {
    EXPECT_FALSE(has_frame(site, "[before main") || has_frame(site, "[in dlopen")) << site["frames"].dump(1);
    if (!has_frame(site, "Registration(int)")) continue;
    EXPECT_EQ(site["live_blocks"], 1) << "a call site of its own";
    (in_plugin(site) ? plugin : program) += 1;
  }
  EXPECT_EQ(program, kOperators);
  EXPECT_EQ(plugin, kPluginOperators);
  Outcome report = leakscope({"report", "--format", "json", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(nlohmann::json::parse(report.out)["startup_stacks"]["stacks"], 0);
  // Compared with a run that cut them, its start-up sites cannot match: the diff says why.
  std::string cut = run_registry({});
  Outcome diff = leakscope({"diff", cut, file});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("note: start-up stacks are cut to 1 frame before and whole after (startup_depth)"),
            std::string::npos) << diff.out;
}

// One helper allocating in every start-up scope: each scope's blocks are counted at the stack that
// scope gives them (the code that started it after the marker), however many blocks came from the
// same caller in another scope before, or in the same scope by a path too deep to unwind.
TEST(StartupStacks, OneHelperInEveryStartUpScopeIsCountedAtEachScopesOwnStack) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("load_scopes"), fixture("libfixture_scope_outer.so"),
                           fixture("libfixture_scope_inner.so"), fixture("libfixture_scope_other.so"),
                           fixture("libfixture_scope_deep.so")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "loaded\n");
  nlohmann::json state = dump(file, {"--top", "100000"});
  std::map<std::string, std::pair<int64_t, int64_t>> scopes;  // by what follows the marker: blocks, bytes
  for (const auto& site : sites_from(state, "keep_block")) {
    ASSERT_GE(site["frames"].size(), 2u) << site["frames"].dump(1);
    std::string after_marker = site["frames"].size() > 2 ? function_of(site["frames"][2]) : "";
    std::string scope = function_of(site["frames"][1]).substr(0, 12) + " " + after_marker;
    EXPECT_EQ(scopes.count(scope), 0u) << scope << ": one site a scope";
    scopes[scope] = {site["live_blocks"].get<int64_t>(), site["live_bytes"].get<int64_t>()};
  }
  using Counted = std::pair<int64_t, int64_t>;
  EXPECT_EQ(scopes, (std::map<std::string, Counted>{
                        {"[before main ", {10, 160}},
                        // The outer plugin's blocks, before and after the load its initializer made.
                        {"[in dlopen;  load_outer", {50, 1200}},
                        {"[in dlopen;  register_outer_blocks", {40, 1600}},
                        {"[in dlopen;  load_other", {50, 2800}},
                        {"[in dlopen;  load_deep", {20, 480}},
                        // Their unwind stops short of dlopen's caller: nothing after the marker.
                        {"[in dlopen;  ", {20, 960}},
                    }));
}

// Python code run by a library's initializer as it loads, loading another library itself before
// its lines that keep blocks: each line's blocks are its own, though the same C function of the
// interpreter allocates them all, and their frames take the place the loading call's had.
TEST(StartupStacks, PythonRunFromALibrarysInitializerKeepsEachLinesBlocks) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", "/usr/bin/python3", "-c",
                           "import ctypes\nctypes.CDLL('" + fixture("libfixture_python_in_initializer.so") +
                               "')\nprint(len(kept_small), len(kept_large))"},
                          {{"SCOPE_INNER_PLUGIN", fixture("libfixture_scope_inner.so")}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "50 30\n");
  nlohmann::json state = dump(file, {"--top", "100000"});
  std::map<int64_t, int64_t> bytes_by_line;  // of the code the initializer ran (<string>)
  std::map<int64_t, int64_t> blocks_by_line;
  for (const auto& site : state["sites"]) {
    for (const auto& frame : site["frames"]) {
      if (frame["language"] != "python" || frame["file"] != "<string>" || frame["function"] != "<listcomp>") continue;
      bytes_by_line[frame["line"].get<int64_t>()] += site["live_bytes"].get<int64_t>();
      blocks_by_line[frame["line"].get<int64_t>()] += site["live_blocks"].get<int64_t>();
      break;
    }
  }
  // Each buffer (its size and a byte more) and its bytearray object, and the list that keeps them.
  ASSERT_EQ(bytes_by_line.size(), 2u) << state["sites"].dump().substr(0, 3000);
  EXPECT_EQ(blocks_by_line[3], 50 * 2 + 1);
  EXPECT_EQ(blocks_by_line[4], 30 * 2 + 1);
  EXPECT_GE(bytes_by_line[3], 50 * 1001);
  EXPECT_LT(bytes_by_line[3], 50 * 1001 + 50 * 100);
  EXPECT_GE(bytes_by_line[4], 30 * 3001);
  EXPECT_LT(bytes_by_line[4], 30 * 3001 + 30 * 100);
}

}  // namespace
}  // namespace leakscope::testing
