// `leakscope check` and `leakscope run --check`: the CI gate on real runs, its limits, baselines,
// suppressions, JUnit output and the runtime's residue.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "harness.h"
#include "support/unwrapped.h"

namespace leakscope::testing {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(Check, SteadyLeakFailsWithOneLineNamingItAndPassesAtItsExactSize) {
  std::string file = steady_leak_stream();
  Outcome gate = leakscope({"check", file});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
  EXPECT_NE(unwrapped(gate.out).find("\nleaks: 1000.00 KiB in 1 group, +"), std::string::npos) << gate.out;
  EXPECT_NE(unwrapped(gate.out).find("\n  leak parse_record (steady_leak_ci.c:17): 1000.00 KiB, +"), std::string::npos) << gate.out;
  EXPECT_NE(unwrapped(gate.out).find("FAIL max-leaked: 1000.00 KiB leaked in 1 group > 0 B (largest: parse_record (steady_leak_ci.c:17)"),
            std::string::npos)
      << gate.out;
  EXPECT_TRUE(has_line(gate.out, "leakscope check: FAILED (1 of 1 check)")) << gate.out;

  Outcome exact = leakscope({"check", file, "--max-leaked", "1000KiB"});  // 1,024,000 bytes: within
  EXPECT_EQ(exact.exit_code, 0) << exact.out;
  EXPECT_NE(unwrapped(exact.out).find("PASS max-leaked: 1000.00 KiB leaked in 1 group <= 1000.00 KiB"), std::string::npos) << exact.out;
  Outcome under = leakscope({"check", file, "--max-leaked", "1023999"});
  EXPECT_EQ(under.exit_code, 1) << under.out;
  // Figures that would round alike are written in bytes.
  EXPECT_NE(under.out.find("FAIL max-leaked: 1024000 B leaked in 1 group > 1023999 B"), std::string::npos) << under.out;
}

TEST(Check, LeakRateAndRssLimitsHoldOrFailEachOnItsOwnLine) {
  std::string file = steady_leak_stream();
  Outcome strict = leakscope({"check", file, "--max-leak-rate", "1KiB/min", "--max-rss", "1MiB", "--max-leaked", "64MiB"});
  EXPECT_EQ(strict.exit_code, 1) << strict.out;
  EXPECT_NE(unwrapped(strict.out).find("FAIL max-leak-rate: leaks grow +"), std::string::npos) << strict.out;
  EXPECT_NE(unwrapped(strict.out).find("(fastest: parse_record (steady_leak_ci.c:17) +"), std::string::npos) << strict.out;
  EXPECT_NE(unwrapped(strict.out).find("FAIL max-rss: peak RSS "), std::string::npos) << strict.out;
  EXPECT_NE(unwrapped(strict.out).find("PASS max-leaked:"), std::string::npos) << strict.out;
  EXPECT_TRUE(has_line(strict.out, "leakscope check: FAILED (2 of 3 checks)")) << strict.out;

  Outcome loose = leakscope({"check", file, "--max-leak-rate", "1GiB/s", "--max-rss", "8GiB"});
  EXPECT_EQ(loose.exit_code, 0) << loose.out;
  EXPECT_TRUE(has_line(loose.out, "leakscope check: passed (2 checks)")) << loose.out;

  // A rate just under the leak's, which would round alike, is written in bytes a minute.
  Outcome report = leakscope({"report", "--format", "json", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  double rate = nlohmann::json::parse(report.out)["groups"][0]["growth_bytes_per_min"].get<double>();
  auto under = static_cast<int64_t>(rate) - 1;
  Outcome close = leakscope({"check", file, "--max-leak-rate", std::to_string(under)});
  EXPECT_EQ(close.exit_code, 1) << close.out;
  EXPECT_NE(close.out.find("B/min > +" + std::to_string(under) + " B/min"), std::string::npos) << close.out;
}

TEST(Check, BaselineMatchesLeaksByFunctionAndFailsNewOrGrownOnes) {
  std::string file = steady_leak_stream();
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json baseline = nlohmann::json::parse(report.out);
  std::string same = write_file("same.json", baseline.dump());
  Outcome unchanged = leakscope({"check", file, "--baseline", same, "--max-growth", "0"});
  EXPECT_EQ(unchanged.exit_code, 0) << unchanged.out;
  EXPECT_NE(unwrapped(unchanged.out).find("PASS max-growth: no leak grew more than 0% over the baseline"), std::string::npos)
      << unchanged.out;

  // An earlier build: the leak held half as much, at another line.
  nlohmann::json earlier = baseline;
  for (auto& group : earlier["groups"]) {
    if (group["verdict"] != "leak") continue;
    group["live_bytes"] = group["live_bytes"].get<int64_t>() / 2;
    group["first_user_frame"]["line"] = 999;
    group["first_user_frame"]["address"] = "0x1";
  }
  std::string half = write_file("half.json", earlier.dump());
  Outcome grown = leakscope({"check", file, "--baseline", half, "--max-growth", "50%"});
  EXPECT_EQ(grown.exit_code, 1) << grown.out;
  EXPECT_NE(unwrapped(grown.out).find("FAIL max-growth: parse_record (steady_leak_ci.c:17) 1000.00 KiB is +100% over the "
                           "baseline's 500.00 KiB > 50% over the baseline"),
            std::string::npos)
      << grown.out;
  EXPECT_EQ(leakscope({"check", file, "--baseline", half, "--max-growth", "100"}).exit_code, 0);

  nlohmann::json without = baseline;
  without["groups"] = nlohmann::json::array();
  without["totals"]["groups"]["leak"] = 0;
  std::string none = write_file("none.json", without.dump());
  Outcome fresh = leakscope({"check", file, "--baseline", none, "--max-growth", "1000"});
  EXPECT_EQ(fresh.exit_code, 1) << fresh.out;
  EXPECT_NE(unwrapped(fresh.out).find("FAIL max-growth: new leak: parse_record (steady_leak_ci.c:17) 1000.00 KiB (no leak "
                                      "there in the baseline) > 1000%"),
            std::string::npos)
      << fresh.out;

  // A baseline made with a small --top lists only some of its leaks: each left out would be "new".
  nlohmann::json cut = baseline;
  cut["totals"]["groups"]["leak"] = 5;
  Outcome truncated = leakscope({"check", file, "--baseline", write_file("cut.json", cut.dump()), "--max-growth", "10"});
  EXPECT_EQ(truncated.exit_code, 3);
  EXPECT_NE(truncated.err.find("lists 1 of its 5 leak groups (--top)"), std::string::npos) << truncated.err;

  // Another program's baseline (a CI job that fetched the wrong artifact) is said, not taken quietly.
  nlohmann::json other = baseline;
  other["process"]["exe"] = "/builds/other_service";
  std::string other_path = write_file("other.json", other.dump());
  Outcome foreign = leakscope({"check", file, "--baseline", other_path, "--max-growth", "0"});
  EXPECT_NE(foreign.err.find("note: the baseline " + other_path + " is of other_service, this run of steady_leak_ci"),
            std::string::npos)
      << foreign.err;
  EXPECT_EQ(unchanged.err.find("note: the baseline"), std::string::npos) << unchanged.err;
}

// A short test binary's new leak is lost at exit before it can grow: a baseline holds what each
// place lost too, so that max-growth fails a place that newly loses blocks.
TEST(Check, BaselineOfALeakCheckedRunFailsAPlaceThatNewlyLosesBlocks) {
  std::string file = scratch_dir() + "/lost.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--leak-check", "--", fixture("lost_tree")}).exit_code, 0);
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json baseline = nlohmann::json::parse(report.out);
  Outcome same = leakscope({"check", file, "--baseline", write_file("same.json", baseline.dump()), "--max-growth", "0"});
  EXPECT_EQ(same.exit_code, 0) << same.out;

  nlohmann::json before = baseline;
  for (auto& group : before["groups"]) {
    if (group["first_user_frame"]["function"] != "drop_tree") continue;
    group["lost_bytes"] = 0;
    group["indirectly_lost_bytes"] = 0;
  }
  Outcome newly = leakscope({"check", file, "--baseline", write_file("before.json", before.dump()), "--max-growth", "0"});
  EXPECT_EQ(newly.exit_code, 1) << newly.out;
  EXPECT_NE(unwrapped(newly.out).find("FAIL max-growth: newly lost: drop_tree (lost_tree.c:14) 256 B (nothing lost there in "
                                      "the baseline)"),
            std::string::npos)
      << newly.out;

  // A baseline of a run that was not scanned says nothing of what was lost.
  nlohmann::json unscanned = before;
  unscanned["leak_check"] = {{"scanned", false}};
  EXPECT_EQ(leakscope({"check", file, "--baseline", write_file("unscanned.json", unscanned.dump()), "--max-growth", "0"}).exit_code,
            0);
}

TEST(Check, SuppressedLeaksAreShownApartAndNotGated) {
  std::string file = steady_leak_stream();
  std::string rules = write_file("known.supp", "# a parser leak the vendor knows of\n\nfunction:parse_record*\n");
  Outcome suppressed = leakscope({"check", file, "--suppress", rules});
  EXPECT_EQ(suppressed.exit_code, 0) << suppressed.out << suppressed.err;
  // A rule file given before the stream, options after it: each --suppress takes one file.
  Outcome before = leakscope({"check", "--suppress", rules, file, "--site-memory", "0"});
  EXPECT_EQ(before.exit_code, 0) << before.out << before.err;
  EXPECT_EQ(before.out, suppressed.out);
  EXPECT_TRUE(has_line(suppressed.out, "leaks: 0 B in 0 groups")) << suppressed.out;
  EXPECT_NE(unwrapped(suppressed.out).find("not gated, leak parse_record (steady_leak_ci.c:17): 1000.00 KiB"), std::string::npos)
      << suppressed.out;
  EXPECT_NE(unwrapped(suppressed.out).find("suppressed by function:parse_record* (" + rules + ":3)"), std::string::npos)
      << suppressed.out;

  // LeakSanitizer's `leak:` matches a module too.
  std::string by_module = write_file("module.supp", "leak:*steady_leak_ci\n");
  EXPECT_EQ(leakscope({"check", file, "--suppress", by_module}).exit_code, 0);
  std::string unrelated = write_file("other.supp", "function:zlib_*\nmodule:*libcuda.so*\nfile:*/vendor/*\n");
  EXPECT_EQ(leakscope({"check", file, "--suppress", unrelated}).exit_code, 1);
  EXPECT_EQ(suppressed.err.find("left nothing out"), std::string::npos) << suppressed.err;

  // A rule that suppresses nothing is said: here a file rule written without its directories.
  std::string misspelt = write_file("misspelt.supp", "file:steady_leak_ci.c\n");
  Outcome unmatched = leakscope({"check", file, "--suppress", misspelt});
  EXPECT_EQ(unmatched.exit_code, 1);
  EXPECT_NE(unmatched.err.find("leakscope check: note: 1 suppression rule left nothing out of this run's gate: "
                               "file:steady_leak_ci.c (" + misspelt + ":1) (a file rule is matched against the whole source "
                               "path: file:*/steady_leak_ci.c)"),
            std::string::npos)
      << unmatched.err;

  std::string broken = write_file("broken.supp", "function:ok\nparse_record\n");
  Outcome bad = leakscope({"check", file, "--suppress", broken});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.err, "leakscope: error: " + broken + ":2: not a rule (function:GLOB, file:GLOB, module:GLOB or leak:GLOB): "
                     "parse_record\n");
  Outcome missing = leakscope({"check", file, "--suppress", scratch_dir() + "/none.supp"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("cannot read the suppressions file"), std::string::npos) << missing.err;
}

TEST(Check, JUnitHoldsOneTestCasePerLimit) {
  std::string file = steady_leak_stream();
  std::string junit = scratch_dir() + "/gate.xml";
  Outcome gate = leakscope({"check", file, "--max-leaked", "0", "--max-rss", "8GiB", "--junit", junit});
  EXPECT_EQ(gate.exit_code, 1);
  std::string xml = read_file(junit);
  EXPECT_NE(xml.find("<testsuite name=\"leakscope\" tests=\"2\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"leakscope.check\" name=\"max-leaked\"><failure message=\"1000.00 KiB leaked"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"leakscope.check\" name=\"max-rss\"><system-out>peak RSS"), std::string::npos) << xml;
  EXPECT_NE(xml.find("&lt;= 8.00 GiB (less leakscope&apos;s own memory)"), std::string::npos) << xml;

  Outcome unwritable = leakscope({"check", file, "--junit", scratch_dir() + "/no/such/dir/gate.xml"});
  EXPECT_EQ(unwritable.exit_code, 4);
  EXPECT_NE(unwritable.err.find("--junit: cannot write"), std::string::npos) << unwritable.err;
}

TEST(Check, BadLimitsAndInputsGetOneLineAndTheirExitCode) {
  std::string file = steady_leak_stream();
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string error;
  };
  std::string not_json = write_file("baseline.json", "{\"groups\": [{\"id\": 0}]}");
  std::string garbage = write_file("garbage.lsc", std::string(4096, 'x'));
  std::vector<Case> cases = {
      {{"check", file, "--max-leak-rate", "5MiB/week"}, 2, "max-leak-rate: not a rate"},
      {{"check", file, "--max-leaked", "lots"}, 2, "max-leaked: not a size (such as 512, 64KiB, 1MiB, 2GiB): lots"},
      {{"check", file, "--baseline", not_json}, 2, "a baseline and max-growth go together"},
      {{"check", file, "--max-growth", "10"}, 2, "a baseline and max-growth go together"},
      {{"check", file, "--max-growth", "ten", "--baseline", not_json}, 2, "max-growth: not a percentage such as 20 or 12.5%: ten"},
      {{"check", file, "--baseline", not_json, "--max-growth", "10"}, 3, "not format version 1"},
      {{"check", file, "--baseline", scratch_dir(), "--max-growth", "10"}, 3, "cannot read the baseline: a directory, not a file"},
      {{"check", file, "--suppress", scratch_dir()}, 3, "cannot read the suppressions file: a directory, not a file"},
      {{"check", file, "--suppress", scratch_dir() + "/missing.supp"}, 3, "cannot read the suppressions file: No such file or directory"},
      {{"check", file, "--baseline", scratch_dir() + "/missing.json", "--max-growth", "10"}, 3,
       "cannot read the baseline: No such file or directory"},
      {{"check", file, "--junit", ""}, 2, "needs a value"},
      {{"check", file, "--max-growth", "nan", "--baseline", not_json}, 2, "max-growth: not a percentage"},
      {{"check", file, "--max-leaked", "17179869184GiB"}, 2, "max-leaked: not a size"},
      {{"check", file, "--max-leak-rate", "300000000GiB/s"}, 2, "max-leak-rate: not a rate"},
      {{"check", file, "--max-lost", "lots"}, 2, "max-lost: not a size (such as 512, 64KiB, 1MiB, 2GiB): lots"},
      // A run that was not leak-checked has no lost bytes to hold.
      {{"check", file, "--max-lost", "0"}, 3, "holds no leak check, so max-lost cannot judge it"},
      {{"check", garbage}, 3, garbage},
      {{"check", scratch_dir() + "/missing.lsc"}, 3, "missing.lsc"},
  };
  for (const Case& c : cases) {
    Outcome outcome = leakscope(c.args);
    EXPECT_EQ(outcome.exit_code, c.code) << c.args[2] << ": " << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
    EXPECT_NE(outcome.err.find(c.error), std::string::npos) << outcome.err;
  }
}

TEST(Check, RunCheckGatesInOneStepAndAFailingCommandKeepsItsStatus) {
  std::string directory = scratch_dir();
  Outcome leaking = leakscope({"run", "-o", directory + "/a.lsc", "--check", "max-leaked=512KiB,max-rss=8GiB", "--",
                               fixture("steady_leak_ci"), "250"});
  EXPECT_EQ(leaking.exit_code, 1) << leaking.out << leaking.err;
  EXPECT_NE(unwrapped(leaking.out).find("records=250"), std::string::npos);  // the command's own output, untouched
  EXPECT_NE(unwrapped(leaking.out).find("FAIL max-leaked: 1000.00 KiB leaked in 1 group > 512.00 KiB"), std::string::npos)
      << leaking.out;
  EXPECT_NE(unwrapped(leaking.out).find("PASS max-rss:"), std::string::npos) << leaking.out;

  Outcome allowed = leakscope({"run", "-o", directory + "/b.lsc", "--check", "max-leaked=64MiB", "--",
                               fixture("steady_leak_ci"), "100"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;

  Outcome failed = leakscope({"run", "-o", directory + "/c.lsc", "--check", "max-leaked=64MiB", "--",
                              fixture("steady_leak_ci"), "100", "3"});
  EXPECT_EQ(failed.exit_code, 3) << failed.out << failed.err;  // the tests' failure wins over a passing gate
  EXPECT_NE(unwrapped(failed.out).find("leakscope check: passed"), std::string::npos) << failed.out;

  EXPECT_NE(failed.err.find("leakscope: the command failed with status 3, which run exits with (the gate passed)"),
            std::string::npos)
      << failed.err;

  // An empty --check, or one without a value, gates with the defaults: no leak allowed.
  Outcome defaults = leakscope({"run", "-o", directory + "/e.lsc", "--check", "", "--", fixture("steady_leak_ci"), "250"});
  EXPECT_EQ(defaults.exit_code, 1) << defaults.out << defaults.err;
  Outcome bare = leakscope({"run", "-o", directory + "/e.lsc", "--check", "--", fixture("steady_leak_ci"), "250"});
  EXPECT_EQ(bare.exit_code, 1) << bare.out << bare.err;
  EXPECT_NE(bare.out.find("FAIL max-leaked"), std::string::npos) << bare.out;

  Outcome misspelt = leakscope({"run", "-o", directory + "/d.lsc", "--check", "max-lekaed=1MiB", "--",
                                fixture("steady_leak_ci"), "10"});
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_NE(misspelt.err.find("--check: unknown limit 'max-lekaed'"), std::string::npos) << misspelt.err;
  EXPECT_FALSE(std::filesystem::exists(directory + "/d.lsc"));  // refused before the command ran
  Outcome twice = leakscope({"run", "-o", directory + "/d.lsc", "--check", "max-leaked=1MiB, max-leaked=2MiB", "--",
                             fixture("steady_leak_ci"), "10"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("--check: 'max-leaked' is given twice"), std::string::npos) << twice.err;
}

// The options the command runs with, as it sees them.
TEST(Check, RunCheckAsksForALeakCheckUnlessTheOptionsDecideOrSample) {
  std::string directory = scratch_dir();
  auto options_seen = [&](const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    std::string seen = directory + "/options";
    std::filesystem::remove(seen);
    std::vector<std::string> all = {"run", "-o", directory + "/o.lsc"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--", "sh", "-c", "printf %s \"$LEAKSCOPE_OPTIONS\" > " + seen});
    leakscope(all, env);
    return read_file(seen);
  };
  EXPECT_NE(options_seen({"--check", "max-leaked=1GiB"}).find(",leak_check=1"), std::string::npos);
  EXPECT_NE(options_seen({"--leak-check"}).find(",leak_check=1"), std::string::npos);
  EXPECT_EQ(options_seen({}).find("leak_check"), std::string::npos);
  EXPECT_EQ(options_seen({"--check", "max-leaked=1GiB", "--sample", "512KiB"}).find("leak_check"), std::string::npos);
  EXPECT_EQ(options_seen({"--check", "max-leaked=1GiB"}, {{"LEAKSCOPE_OPTIONS", "leak_check=0"}}),
            "leak_check=0,output=" + directory + "/o.lsc");
  EXPECT_EQ(options_seen({"--check", "max-leaked=1GiB", "--option", "leak_check=0"}).find("leak_check=1"), std::string::npos);

  // Refused before the command runs: a gate on lost bytes of a run that is not scanned.
  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"--check", "max-lost=0", "--sample", "512KiB"},
        std::vector<std::string>{"--check", "max-lost=0", "--option", "leak_check=0"},
        std::vector<std::string>{"--leak-check", "--sample", "512KiB"}}) {
    std::vector<std::string> args = {"run", "-o", directory + "/refused.lsc"};
    args.insert(args.end(), refused.begin(), refused.end());
    args.insert(args.end(), {"--", "true"});
    Outcome outcome = leakscope(args);
    EXPECT_EQ(outcome.exit_code, 2) << refused[1] << ": " << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
    EXPECT_FALSE(std::filesystem::exists(directory + "/refused.lsc"));
  }
}

// The only limit given needs a leak check, and the program leaves by _exit before its teardown
// (as a Go program's os.Exit does): nothing can be checked, which is never a pass.
TEST(Check, RunCheckWhereNoLimitGivenAppliesIsNotAPass) {
  std::string directory = scratch_dir();
  Outcome gated = leakscope({"run", "-o", directory + "/x.lsc", "--check", "max-lost=0", "--", "/usr/bin/python3", "-c",
                             "import os\nkept = [bytearray(4096) for _ in range(100)]\nos._exit(0)"});
  EXPECT_EQ(gated.exit_code, 3) << gated.out << gated.err;
  EXPECT_NE(gated.out.find("leakscope check: nothing checked: no limit given applies to this run\n"), std::string::npos) << gated.out;
  EXPECT_EQ(gated.out.find("passed"), std::string::npos) << gated.out;
  EXPECT_NE(gated.err.find("none of the limits given applies to this run, so nothing was checked"), std::string::npos) << gated.err;
}

TEST(Check, RunCheckGatesTheProgramsAWrapperScriptForks) {
  // A CI script that runs the test binary as a child (not the last command, so the shell forks).
  std::string directory = scratch_dir();
  std::string script = fixture("steady_leak_ci") + " 250; status=$?; echo done; exit $status";
  Outcome gated = leakscope({"run", "-o", directory + "/w.lsc", "--check", "max-leaked=512KiB", "--", "sh", "-c", script});
  EXPECT_EQ(gated.exit_code, 1) << gated.out << gated.err;
  EXPECT_NE(unwrapped(gated.out).find("FAIL max-leaked: 1000.00 KiB leaked in 1 group > 512.00 KiB"), std::string::npos)
      << gated.out;
  EXPECT_NE(gated.out.find("steady_leak_ci (pid"), std::string::npos) << gated.out;
  // The last line says which of the processes failed, and how to gate the command alone.
  std::string text = unwrapped(gated.out);
  size_t summary = text.rfind("\nleakscope check: FAILED in 1 of the ");
  ASSERT_NE(summary, std::string::npos) << gated.out;
  EXPECT_NE(text.find("processes gated: " + directory + "/w.lsc.", summary), std::string::npos) << gated.out;
  EXPECT_NE(text.find("--no-follow-fork and --no-follow-exec leave them out", summary), std::string::npos) << gated.out;
  EXPECT_EQ(text.find('\n', summary + 1), text.size() - 1) << "the summary is the last line: " << gated.out;
}

TEST(Check, AStreamDamagedInsideIsBadInputAndTheJUnitFileSaysSo) {
  std::string file = steady_leak_stream();
  std::string junit = scratch_dir() + "/gate.xml";
  std::ofstream(junit) << "<testsuites tests=\"1\" failures=\"0\"></testsuites>";  // an earlier run's
  std::string damaged = scratch_dir() + "/damaged.lsc";
  std::filesystem::copy_file(file, damaged);
  {
    // Flipped, not overwritten: a byte written over one of the same value would damage nothing.
    std::fstream bytes(damaged, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekg(3000);
    char byte = static_cast<char>(bytes.get());
    bytes.seekp(3000);
    bytes.put(static_cast<char>(~byte));
  }
  Outcome gate = leakscope({"check", damaged, "--max-leaked", "64MiB", "--junit", junit});
  EXPECT_EQ(gate.exit_code, 3) << gate.out << gate.err;
  EXPECT_NE(gate.err.find("damaged inside (see the warnings above): a gate cannot judge it"), std::string::npos) << gate.err;
  std::string xml = read_file(junit);
  EXPECT_NE(xml.find("<testcase classname=\"leakscope.check\" name=\"stream\"><failure"), std::string::npos) << xml;

  Outcome bad_rules = leakscope({"check", file, "--suppress", write_file("bad.supp", "nonsense\n"), "--junit", junit});
  EXPECT_EQ(bad_rules.exit_code, 3);
  EXPECT_NE(read_file(junit).find("not a rule"), std::string::npos);
}

TEST(Check, TheRuntimesOwnResidueIsShownApartAndNeverGated) {
  // 40 workers parked for good: each one's TLS block (304 bytes, from the dynamic loader) grows
  // with them, a leak by its trend but the runtime's.
  std::string file = scratch_dir() + "/workers.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--interval", "100ms", "--", fixture("parked_workers"), "40"}).exit_code, 0);
  Outcome gate = leakscope({"check", file});
  EXPECT_EQ(gate.exit_code, 0) << gate.out;
  EXPECT_TRUE(has_line(gate.out, "leaks: 0 B in 0 groups")) << gate.out;
  EXPECT_NE(unwrapped(gate.out).find("not gated, leak start_worker (parked_workers.c:26)"), std::string::npos) << gate.out;
  EXPECT_NE(unwrapped(gate.out).find("runtime: the dynamic loader's own (link maps, thread TLS blocks)"), std::string::npos) << gate.out;

  // The report says so too, and still judges it.
  Outcome report = leakscope({"report", "--format", "json", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  bool marked = false;
  for (const auto& group : document["groups"]) {
    if (group["first_user_frame"].is_object() && group["first_user_frame"]["function"] == "start_worker") {
      marked = group["runtime"] == "the dynamic loader's own (link maps, thread TLS blocks)";
    }
  }
  EXPECT_TRUE(marked) << report.out.substr(0, 4000);
  // In its text, apart from the program's leak suspects.
  std::string text = unwrapped(leakscope({"report", file}).out);
  EXPECT_NE(text.find("\nLeak suspects: 0\n"), std::string::npos) << text;
  size_t residue = text.find("\nThe runtime's own, growing (check leaves it out): 1\n");
  EXPECT_NE(residue, std::string::npos) << text;
  EXPECT_NE(text.find("runtime: the dynamic loader's own (link maps, thread TLS blocks), not the program's", residue),
            std::string::npos)
      << text;

  Outcome gated = leakscope({"check", file, "--no-runtime-suppressions"});
  EXPECT_EQ(gated.exit_code, 1) << gated.out;
  EXPECT_NE(unwrapped(gated.out).find("FAIL max-leaked: 11.88 KiB leaked in 1 group > 0 B (largest: start_worker"), std::string::npos)
      << gated.out;
}

TEST(Check, TheCiExamplePassesTheDemoWhenItsLimitAllowsTheLeakAndFailsWithAClearLine) {
  std::string script = std::string(LEAKSCOPE_SOURCE_DIR) + "/examples/ci/gate_demo.sh";
  std::map<std::string, std::string> env{{"BUILD_DIR", LEAKSCOPE_BUILD_DIR}, {"DEMO_SECONDS", "3"}};
  env["OUT_DIR"] = scratch_dir();
  Outcome allowed = run_program({"bash", script}, env);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
  EXPECT_TRUE(has_line(allowed.out, "leakscope check: passed (3 checks)")) << allowed.out;
  EXPECT_NE(read_file(env["OUT_DIR"] + "/leak-gate.xml").find("failures=\"0\""), std::string::npos);

  env["OUT_DIR"] = scratch_dir();
  env["MAX_LEAKED"] = "256KiB";  // the demo leaks about 290 KiB a second
  Outcome strict = run_program({"bash", script}, env);
  EXPECT_EQ(strict.exit_code, 1) << strict.out << strict.err;
  EXPECT_NE(unwrapped(strict.out).find("> 256.00 KiB (largest: format_debug_trace (inference_service.cc:84)"),
            std::string::npos)
      << strict.out;
  EXPECT_NE(strict.out.find("FAIL max-leaked: "), std::string::npos) << strict.out;
}

}  // namespace
}  // namespace leakscope::testing
