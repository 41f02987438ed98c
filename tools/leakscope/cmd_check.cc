// leakscope check: the CI gate. Judges a stream as `report` does and holds its leaks, leak rate,
// RSS and lost blocks against limits; exit 1 when one is exceeded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "cli.h"
#include "core/options.h"
#include "report/frame_roles.h"
#include "report/gate_format.h"
#include "report/leak_gate.h"
#include "report/suppressions.h"
#include "report/units.h"

namespace leakscope::cli {
namespace {

constexpr const char* kSizeForms = "such as 512, 64KiB, 1MiB, 2GiB";

bool parse_bytes(const std::string& text, int64_t* out) {
  uint64_t bytes = 0;
  if (!internal::parse_size_bytes(text.data(), text.size(), &bytes) ||
      bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  *out = static_cast<int64_t>(bytes);
  return true;
}

// parse_rate() reads "100KiB/min", "1MiB/s", "64MiB/h" or a bare size (per minute) as bytes per
// minute.
bool parse_rate(const std::string& text, double* bytes_per_min) {
  size_t slash = text.find('/');
  std::string unit = slash == std::string::npos ? "min" : text.substr(slash + 1);
  double per_min = unit == "s" ? 60.0 : unit == "min" ? 1.0 : unit == "h" ? 1.0 / 60.0 : 0.0;
  int64_t bytes = 0;
  if (per_min == 0.0 || !parse_bytes(text.substr(0, slash), &bytes)) return false;
  *bytes_per_min = static_cast<double>(bytes) * per_min;
  return std::isfinite(*bytes_per_min) && *bytes_per_min < 9.0e18;
}

bool parse_percent(std::string text, double* out) {
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0) return false;
  *out = value;
  return true;
}

std::string trimmed(const std::string& text) {
  size_t begin = text.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(' ') - begin + 1);
}

// The JUnit file when the gate could not judge a stream: one errored test case, so that a CI
// step reading it shows the error instead of an earlier run's result.
void write_junit_error(const std::string& path, const std::string& file, const std::string& message) {
  report::GateResult result;
  result.checks.push_back({"stream", false, message});
  std::ofstream(path, std::ios::trunc) << report::gate_junit({{file, &result}});
}

}  // namespace

bool parse_check_spec(const std::string& spec, CheckOptions* options, std::string* error) {
  std::set<std::string> seen;
  size_t at = 0;
  while (at <= spec.size()) {
    size_t end = spec.find(',', at);
    if (end == std::string::npos) end = spec.size();
    std::string item = trimmed(spec.substr(at, end - at));
    at = end + 1;
    if (item.empty()) continue;
    size_t equals = item.find('=');
    std::string name = trimmed(item.substr(0, equals));
    std::string value = equals == std::string::npos ? "" : trimmed(item.substr(equals + 1));
    if (name != "suppress" && !seen.insert(name).second) {
      *error = fmt::format("--check: '{}' is given twice", name);
      return false;
    }
    if (name == "no-runtime-suppressions") {
      if (equals != std::string::npos && value != "1" && value != "0") {
        *error = "--check: no-runtime-suppressions takes no value (or =1, =0)";
        return false;
      }
      options->no_runtime_suppressions = value != "0";
      continue;
    }
    static const std::set<std::string> kNames = {"max-leaked", "max-leak-rate", "max-rss", "max-lost", "baseline",
                                                 "max-growth", "suppress", "junit"};
    if (kNames.count(name) == 0) {
      *error = fmt::format("--check: unknown limit '{}' (max-leaked, max-leak-rate, max-rss, max-lost, baseline, "
                           "max-growth, suppress, junit, no-runtime-suppressions)",
                           name);
      return false;
    }
    if (value.empty()) {
      *error = fmt::format("--check: '{}' needs a value ({}=...)", name, name);
      return false;
    }
    if (name == "max-leaked") options->max_leaked = value;
    if (name == "max-leak-rate") options->max_leak_rate = value;
    if (name == "max-rss") options->max_rss = value;
    if (name == "max-lost") options->max_lost = value;
    if (name == "baseline") options->baseline = value;
    if (name == "max-growth") options->max_growth = value;
    if (name == "suppress") options->suppress.push_back(value);
    if (name == "junit") options->junit = value;
  }
  return true;
}

int prepare_check(const CheckOptions& options, PreparedCheck* prepared) {
  report::GateLimits& limits = prepared->limits;
  int64_t bytes = 0;
  if (!options.max_leaked.empty()) {
    if (!parse_bytes(options.max_leaked, &bytes)) {
      return fail(kUsage, fmt::format("max-leaked: not a size ({}): {}", kSizeForms, options.max_leaked));
    }
    limits.max_leaked_bytes = bytes;
  }
  if (!options.max_rss.empty()) {
    if (!parse_bytes(options.max_rss, &bytes)) {
      return fail(kUsage, fmt::format("max-rss: not a size ({}): {}", kSizeForms, options.max_rss));
    }
    limits.max_rss_bytes = bytes;
  }
  if (!options.max_lost.empty()) {
    if (!parse_bytes(options.max_lost, &bytes)) {
      return fail(kUsage, fmt::format("max-lost: not a size ({}): {}", kSizeForms, options.max_lost));
    }
    limits.max_lost_bytes = bytes;
  }
  if (!options.max_leak_rate.empty()) {
    double rate = 0;
    if (!parse_rate(options.max_leak_rate, &rate)) {
      return fail(kUsage, "max-leak-rate: not a rate such as 100KiB/min, 1MiB/s or 64MiB/h: " + options.max_leak_rate);
    }
    limits.max_leak_bytes_per_min = rate;
  }
  if (!options.max_growth.empty()) {
    double percent = 0;
    if (!parse_percent(options.max_growth, &percent)) {
      return fail(kUsage, "max-growth: not a percentage such as 20 or 12.5%: " + options.max_growth);
    }
    limits.max_growth_percent = percent;
  }
  if (limits.max_growth_percent.has_value() != !options.baseline.empty()) {
    return fail(kUsage, "a baseline and max-growth go together: --baseline REPORT.json --max-growth PCT");
  }
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &prepared->analysis.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  prepared->analysis.fold = options.fold;
  if (!internal::parse_size_bytes(options.site_memory.data(), options.site_memory.size(), &prepared->analysis.site_memory)) {
    return fail(kUsage, "--site-memory: not a size: " + options.site_memory);
  }
  // Read in parts, the gate keeps every leak group and the largest of those it could not judge.
  prepared->analysis.top = report::kUnjudgedNamed;
  prepared->analysis.every_leak = true;
  prepared->junit = options.junit;
  if (!prepared->junit.empty()) {
    // Emptied now, so that a gate stopped by bad input leaves no earlier run's result behind.
    std::ofstream probe(prepared->junit, std::ios::trunc);
    if (!probe) return fail(kOutputError, fmt::format("--junit: cannot write '{}'", prepared->junit));
  }
  auto bad_input = [&](const std::string& message) {
    if (!prepared->junit.empty()) write_junit_error(prepared->junit, options.file, message);
    return fail(kBadInput, message);
  };
  try {
    for (const std::string& path : options.suppress) prepared->suppressions.append(report::Suppressions::load(path));
    if (!options.baseline.empty()) prepared->baseline = report::load_baseline(options.baseline);
  } catch (const report::SuppressionError& error) {
    return bad_input(error.what());
  } catch (const report::BaselineError& error) {
    return bad_input(error.what());
  }
  prepared->runtime_residue = !options.no_runtime_suppressions;
  return kOk;
}

namespace {

// holds_a_snapshot() tells whether the stream at `path` has a snapshot to read.
bool holds_a_snapshot(const std::string& path) {
  try {
    report::StreamReader reader(path);
    return !reader.skim_snapshots().empty();
  } catch (const report::StreamError&) {
    return false;
  }
}

// first_named() is the first `count` of `names`, comma-separated, and how many more there are.
std::string first_named(const std::vector<std::string>& names, size_t count) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < count; ++i) text += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > count) text += fmt::format(" and {} more", names.size() - count);
  return text;
}

// say_unmatched_rules() notes the suppression rules that left nothing out of this run's gate: a
// misspelt one (a file rule without its directories) suppresses nothing, silently otherwise.
void say_unmatched_rules(const report::Suppressions& suppressions) {
  std::vector<const report::SuppressionRule*> unmatched = suppressions.unmatched();
  if (unmatched.empty()) return;
  std::vector<std::string> names;
  std::string bare_file;  // a file rule's pattern without directories, which no whole path matches
  for (const report::SuppressionRule* rule : unmatched) {
    names.push_back(fmt::format("{} ({}:{})", rule->text, rule->origin, rule->line));
    if (bare_file.empty() && rule->field == report::SuppressionRule::Field::kFile && !rule->pattern.empty() &&
        rule->pattern[0] != '/' && rule->pattern[0] != '*') {
      bare_file = rule->pattern;
    }
  }
  fmt::print(stderr, "leakscope check: note: {} suppression rule{} left nothing out of this run's gate: {}{}\n", unmatched.size(),
             unmatched.size() == 1 ? "" : "s", first_named(names, 5),
             bare_file.empty() ? "" : fmt::format(" (a file rule is matched against the whole source path: file:*/{})", bare_file));
}

// run_summary_text() ends the gate of a run of several processes (a command and what it started),
// whose texts came one after another: which of them failed, as the last line read.
std::string run_summary_text(const std::vector<std::pair<std::string, report::GateResult>>& results) {
  std::vector<std::string> failed;
  for (const auto& [file, result] : results) {
    if (!result.passed()) failed.push_back(file);
  }
  if (failed.empty()) return fmt::format("\nleakscope check: passed in every one of the {} processes gated\n", results.size());
  bool started = std::any_of(failed.begin(), failed.end(), [&](const std::string& file) { return file != results.front().first; });
  return fmt::format("\nleakscope check: FAILED in {} of the {} processes gated: {}{}\n", failed.size(), results.size(), first_named(failed, 3),
                     started ? " (the processes the command started are gated too: --no-follow-fork and --no-follow-exec "
                               "leave them out)"
                             : "");
}

// say_sampled() notes that a sampled run's gate compares estimates: a leak smaller than a few
// sampling intervals may have no recorded allocation at all, so a limit under four of them says
// nothing when it passes.
void say_sampled(const std::string& file, uint64_t interval, const report::GateLimits& limits) {
  int64_t resolution = static_cast<int64_t>(4 * interval);
  bool below = limits.max_leaked_bytes ? *limits.max_leaked_bytes < resolution : !limits.any();
  fmt::print(stderr, "leakscope check: {}: note: a sampled run (one allocation recorded per {} on average): its figures are "
                     "estimates, and a leak of less than a few times that may have no recorded allocation{}; gate CI on an "
                     "exact run\n",
             file, report::format_bytes(static_cast<int64_t>(interval)),
             below ? fmt::format(", so limits under {} pass without telling", report::format_bytes(resolution)) : "");
}

}  // namespace

int run_check(const PreparedCheck& prepared, const std::vector<std::string>& files, bool of_a_run) {
  std::vector<std::pair<std::string, report::GateResult>> results;
  for (const std::string& file : files) {
    if (of_a_run && file != files.front() && !holds_a_snapshot(file)) {
      fmt::print(stderr, "leakscope check: {}: skipped: it holds no snapshot (the process ended before its first)\n", file);
      continue;
    }
    try {
      report::AnalysisOptions analysis_options = prepared.analysis;
      // A group too large for a part is read in shares: what the gate leaves out of it is told as they come.
      analysis_options.gate_left_out = report::site_left_out(&prepared.suppressions, prepared.runtime_residue);
      std::unique_ptr<report::RunAnalysis> analysis = report::analyze_run(file, analysis_options);
      if (analysis->damaged_spans != 0) {
        throw report::StreamError(fmt::format("{}: damaged inside (see the warnings above): a gate cannot judge it on what "
                                              "is left",
                                              file));
      }
      report::GateOptions gate;
      gate.limits = prepared.limits;
      if (prepared.limits.max_lost_bytes && !analysis->state.leak_check()) {
        if (!of_a_run) {
          throw report::StreamError(fmt::format("{}: holds no leak check, so max-lost cannot judge it: the process was "
                                                "recorded without leak_check=1 (leakscope run --leak-check, or --check), "
                                                "ended by _exit, a signal or exec before its teardown mark, or --at shows a "
                                                "snapshot from before its scan",
                                                file));
        }
        fmt::print(stderr, "leakscope check: {}: not leak-checked (the process ended by _exit, a signal or exec, before "
                           "teardown): max-lost does not apply to it\n", file);
        gate.lost_not_applicable = true;
      }
      gate.suppressions = &prepared.suppressions;
      gate.runtime_residue = prepared.runtime_residue;
      gate.baseline = prepared.baseline ? &*prepared.baseline : nullptr;
      std::string program = report::module_base_name(analysis->state.process().exe);
      if (gate.baseline != nullptr && !gate.baseline->program.empty() && program != gate.baseline->program) {
        fmt::print(stderr, "leakscope check: {}: note: the baseline {} is of {}, this run of {}: leaks are matched by function, so "
                           "another program's baseline makes each leak new or each known one vanish\n",
                   file, gate.baseline->path, gate.baseline->program, program);
      }
      if (uint64_t interval = analysis->state.process().sample_interval; interval != 0) {
        say_sampled(file, interval, prepared.limits);
      }
      results.emplace_back(file, report::evaluate_gate(*analysis, gate));
      if (files.size() > 1 && file != files.front()) std::fputs("\n", stdout);
      std::string text = report::gate_text(*analysis, results.back().second, file);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    } catch (const report::StreamError& error) {
      if (!prepared.junit.empty()) write_junit_error(prepared.junit, file, error.what());
      return fail(kBadInput, error.what());
    }
  }
  // A gate that judged nothing must not pass: the limits given may all need what this run lacks
  // (max-lost alone, in a process that left before its teardown, as a Go program does).
  size_t applied = 0;
  for (const auto& [file, result] : results) applied += result.checks.size();
  if (!results.empty() && applied == 0) {
    std::string message = fmt::format("{}: none of the limits given applies to this run, so nothing was checked: "
                                      "max-lost needs a leak check, which a process that ends by _exit, a signal or exec "
                                      "(a Go program's exit among them) does not reach; add --max-leaked",
                                      files.front());
    if (!prepared.junit.empty()) write_junit_error(prepared.junit, files.front(), message);
    return fail(kBadInput, message);
  }
  bool passed = true;
  std::vector<std::pair<std::string, const report::GateResult*>> suites;
  for (const auto& [file, result] : results) {
    passed = passed && result.passed();
    suites.emplace_back(file, &result);
  }
  if (results.size() > 1) {
    std::string summary = run_summary_text(results);
    std::fwrite(summary.data(), 1, summary.size(), stdout);
  }
  say_unmatched_rules(prepared.suppressions);
  if (!prepared.junit.empty()) {
    std::ofstream junit(prepared.junit, std::ios::trunc);
    junit << report::gate_junit(suites);
    if (!junit.flush()) return fail(kOutputError, fmt::format("--junit: cannot write '{}'", prepared.junit));
  }
  return passed ? kOk : kLimitExceeded;
}

int check_command(const CheckOptions& options) {
  PreparedCheck prepared;
  if (int code = prepare_check(options, &prepared); code != kOk) return code;
  return run_check(prepared, {options.file});
}

}  // namespace leakscope::cli
