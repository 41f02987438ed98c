// leakscope check: the CI gate. Judges a stream as `report` does and holds its leaks, leak rate
// and RSS against limits; exit 1 when one is exceeded.
#include <cstdio>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "core/options.h"
#include "report/gate_format.h"
#include "report/leak_gate.h"

namespace leakscope::cli {
namespace {

bool parse_bytes(const std::string& text, int64_t* out) {
  uint64_t bytes = 0;
  if (!internal::parse_size_bytes(text.data(), text.size(), &bytes)) return false;
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
  return true;
}

bool parse_percent(std::string text, double* out) {
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || value < 0) return false;
  *out = value;
  return true;
}

}  // namespace

bool parse_check_spec(const std::string& spec, CheckOptions* options, std::string* error) {
  size_t at = 0;
  while (at <= spec.size()) {
    size_t end = spec.find(',', at);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    size_t equals = item.find('=');
    std::string name = item.substr(0, equals);
    std::string value = equals == std::string::npos ? "" : item.substr(equals + 1);
    if (name == "no-runtime-suppressions" && equals == std::string::npos) {
      options->no_runtime_suppressions = true;
      continue;
    }
    if (equals == std::string::npos || value.empty()) {
      *error = fmt::format("--check: '{}' needs a value (name=value)", item);
      return false;
    }
    if (name == "max-leaked") {
      options->max_leaked = value;
    } else if (name == "max-leak-rate") {
      options->max_leak_rate = value;
    } else if (name == "max-rss") {
      options->max_rss = value;
    } else if (name == "baseline") {
      options->baseline = value;
    } else if (name == "max-growth") {
      options->max_growth = value;
    } else if (name == "suppress") {
      options->suppress.push_back(value);
    } else if (name == "junit") {
      options->junit = value;
    } else {
      *error = fmt::format("--check: unknown limit '{}' (max-leaked, max-leak-rate, max-rss, baseline, max-growth, "
                           "suppress, junit, no-runtime-suppressions)",
                           name);
      return false;
    }
  }
  return true;
}

int prepare_check(const CheckOptions& options, PreparedCheck* prepared) {
  report::GateLimits& limits = prepared->limits;
  int64_t bytes = 0;
  if (!options.max_leaked.empty()) {
    if (!parse_bytes(options.max_leaked, &bytes)) return fail(kUsage, "max-leaked: not a size: " + options.max_leaked);
    limits.max_leaked_bytes = bytes;
  }
  if (!options.max_rss.empty()) {
    if (!parse_bytes(options.max_rss, &bytes)) return fail(kUsage, "max-rss: not a size: " + options.max_rss);
    limits.max_rss_bytes = bytes;
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
    if (!parse_percent(options.max_growth, &percent)) return fail(kUsage, "max-growth: not a percentage: " + options.max_growth);
    limits.max_growth_percent = percent;
  }
  if (limits.max_growth_percent.has_value() != !options.baseline.empty()) {
    return fail(kUsage, "a baseline and max-growth go together: --baseline REPORT.json --max-growth PCT");
  }
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &prepared->analysis.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  prepared->analysis.fold = options.fold;
  try {
    for (const std::string& path : options.suppress) prepared->suppressions.append(report::Suppressions::load(path));
    if (!options.baseline.empty()) prepared->baseline = report::load_baseline(options.baseline);
  } catch (const report::SuppressionError& error) {
    return fail(kBadInput, error.what());
  } catch (const report::BaselineError& error) {
    return fail(kBadInput, error.what());
  }
  if (!options.junit.empty()) {
    std::ofstream probe(options.junit, std::ios::app);
    if (!probe) return fail(kOutputError, fmt::format("--junit: cannot write '{}'", options.junit));
  }
  prepared->junit = options.junit;
  prepared->runtime_residue = !options.no_runtime_suppressions;
  return kOk;
}

int run_check(const PreparedCheck& prepared, const std::string& file) {
  try {
    std::unique_ptr<report::RunAnalysis> analysis = report::analyze_run(file, prepared.analysis);
    report::GateOptions gate;
    gate.limits = prepared.limits;
    gate.suppressions = &prepared.suppressions;
    gate.runtime_residue = prepared.runtime_residue;
    gate.baseline = prepared.baseline ? &*prepared.baseline : nullptr;
    report::GateResult result = report::evaluate_gate(*analysis, gate);
    std::string text = report::gate_text(*analysis, result, file);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (!prepared.junit.empty()) {
      std::ofstream junit(prepared.junit, std::ios::trunc);
      junit << report::gate_junit(result, file);
      if (!junit.flush()) return fail(kOutputError, fmt::format("--junit: cannot write '{}'", prepared.junit));
    }
    return result.passed() ? kOk : kLimitExceeded;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

int check_command(const CheckOptions& options) {
  PreparedCheck prepared;
  if (int code = prepare_check(options, &prepared); code != kOk) return code;
  return run_check(prepared, options.file);
}

}  // namespace leakscope::cli
