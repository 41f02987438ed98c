#include "report/leak_gate.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/frame_roles.h"
#include "report/site_format.h"
#include "report/units.h"

namespace leakscope::report {
namespace {

std::string group_name(const SymbolizedFrame& frame) {
  std::string name = function_text(frame, 60);
  if (!frame.file.empty()) name += fmt::format(" ({}:{})", module_base_name(frame.file), frame.line);
  return name;
}

// left_out_by() is why the gate leaves `group` out, or "" when it counts: every site of it is the
// runtime's residue, or matches a rule (the first site's reason names it).
std::string left_out_by(RunAnalysis& analysis, const GroupReport& group, const GateOptions& options) {
  std::string reason;
  for (size_t part : group.parts) {
    std::vector<SymbolizedFrame> frames = analysis.symbolizer->stack(analysis.sites[part].summary.stack);
    std::string why;
    if (options.runtime_residue) {
      if (const char* residue = runtime_residue(frames)) why = std::string("runtime: ") + residue;
    }
    if (why.empty() && options.suppressions != nullptr) {
      if (const SuppressionRule* rule = options.suppressions->match(frames)) {
        why = fmt::format("suppressed by {} ({}:{})", rule->text, rule->origin, rule->line);
      }
    }
    if (why.empty()) return "";
    if (reason.empty()) reason = why;
  }
  return reason;
}

std::string groups_text(size_t count) { return fmt::format("{} group{}", count, count == 1 ? "" : "s"); }

std::string rate_text(double bytes_per_min) {
  return fmt::format("{}{}/min", bytes_per_min >= 0 ? "+" : "", format_bytes(static_cast<int64_t>(bytes_per_min)));
}

SymbolizedFrame frame_from_json(const nlohmann::json& frame) {
  SymbolizedFrame symbolized;
  if (!frame.is_object()) return symbolized;
  auto text = [&](const char* field) {
    auto found = frame.find(field);
    return found != frame.end() && found->is_string() ? found->get<std::string>() : std::string();
  };
  symbolized.function = text("function");
  symbolized.file = text("file");
  symbolized.module = text("module");
  std::string offset = text("offset");
  if (!offset.empty()) symbolized.module_offset = std::strtoull(offset.c_str(), nullptr, 16);
  return symbolized;
}

}  // namespace

std::string group_match_key(const SymbolizedFrame& frame) {
  if (!frame.function.empty()) return frame.function + "|" + module_base_name(frame.file);
  return fmt::format("{}+{:#x}", module_base_name(frame.module), frame.module_offset);
}

Baseline load_baseline(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw BaselineError(fmt::format("{}: cannot read the baseline", path));
  nlohmann::json document = nlohmann::json::parse(file, nullptr, false);
  if (document.is_discarded() || !document.is_object() || !document.contains("groups") || !document["groups"].is_array()) {
    throw BaselineError(fmt::format("{}: not a report document (make one with leakscope report --format json)", path));
  }
  Baseline baseline;
  baseline.path = path;
  for (const nlohmann::json& group : document["groups"]) {
    if (!group.is_object() || !group.contains("live_bytes") || !group["live_bytes"].is_number()) {
      throw BaselineError(fmt::format("{}: a group without live_bytes: not a report document", path));
    }
    const nlohmann::json& frame = group.contains("first_user_frame") && group["first_user_frame"].is_object()
                                      ? group["first_user_frame"]
                                      : group.value("frame", nlohmann::json());
    baseline.live_bytes[group_match_key(frame_from_json(frame))] += group["live_bytes"].get<int64_t>();
  }
  return baseline;
}

bool GateResult::passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const GateCheck& check) { return check.passed; });
}

GateResult evaluate_gate(RunAnalysis& analysis, const GateOptions& options) {
  GateResult result;
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    const GroupReport& group = analysis.groups[g];
    if (group.judgement.verdict == Verdict::kUnknown && group.judgement.reason.rfind("too short", 0) == 0) {
      ++result.unjudged_groups;
      result.unjudged_bytes += group.live_bytes;
    }
    if (group.judgement.verdict != Verdict::kLeak) continue;
    GatedGroup gated{g, group_name(group.user_frame), group.live_bytes, group.judgement.growth_bytes_per_min,
                     left_out_by(analysis, group, options)};
    if (gated.left_out_by.empty()) {
      result.leaked_bytes += gated.live_bytes;
      result.leak_bytes_per_min += gated.growth_bytes_per_min;
      result.counted.push_back(std::move(gated));
    } else if (gated.left_out_by.rfind("runtime", 0) == 0) {
      result.runtime.push_back(std::move(gated));
    } else {
      result.suppressed.push_back(std::move(gated));
    }
  }
  result.peak_rss_bytes = analysis.peak_program_rss_bytes;

  const GateLimits& limits = options.limits;
  bool any_limit = limits.max_leaked_bytes || limits.max_leak_bytes_per_min || limits.max_rss_bytes || limits.max_growth_percent;
  // The groups come fastest-growing first; the largest may be another.
  std::string largest, fastest;
  if (!result.counted.empty()) {
    const GatedGroup& top = *std::max_element(result.counted.begin(), result.counted.end(),
                                              [](const GatedGroup& a, const GatedGroup& b) { return a.live_bytes < b.live_bytes; });
    largest = fmt::format(" (largest: {} {})", top.name, format_bytes(top.live_bytes));
    fastest = fmt::format(" (fastest: {} {})", result.counted[0].name, rate_text(result.counted[0].growth_bytes_per_min));
  }
  if (limits.max_leaked_bytes || !any_limit) {
    int64_t limit = limits.max_leaked_bytes.value_or(0);
    result.checks.push_back({"max-leaked", result.leaked_bytes <= limit,
                             fmt::format("{} leaked in {} {} {}{}", format_bytes(result.leaked_bytes),
                                         groups_text(result.counted.size()), result.leaked_bytes <= limit ? "<=" : ">",
                                         format_bytes(limit), largest)});
  }
  if (limits.max_leak_bytes_per_min) {
    double limit = *limits.max_leak_bytes_per_min;
    bool within = result.leak_bytes_per_min <= limit;
    result.checks.push_back({"max-leak-rate", within,
                             fmt::format("leaks grow {} {} {}{}", rate_text(result.leak_bytes_per_min), within ? "<=" : ">",
                                         rate_text(limit), fastest)});
  }
  if (limits.max_rss_bytes) {
    int64_t limit = *limits.max_rss_bytes;
    bool within = static_cast<int64_t>(result.peak_rss_bytes) <= limit;
    result.checks.push_back({"max-rss", within,
                             fmt::format("peak RSS {} {} {} (less leakscope's own memory)",
                                         format_bytes(static_cast<int64_t>(result.peak_rss_bytes)), within ? "<=" : ">",
                                         format_bytes(limit))});
  }
  if (limits.max_growth_percent && options.baseline != nullptr) {
    double limit = *limits.max_growth_percent;
    size_t failed = 0;
    for (const GatedGroup& gated : result.counted) {
      std::string key = group_match_key(analysis.groups[gated.group].user_frame);
      auto before = options.baseline->live_bytes.find(key);
      int64_t before_bytes = before == options.baseline->live_bytes.end() ? 0 : before->second;
      if (before_bytes <= 0) {
        ++failed;
        result.checks.push_back({"max-growth", false,
                                 fmt::format("new leak: {} {} (not in the baseline {})", gated.name,
                                             format_bytes(gated.live_bytes), options.baseline->path)});
        continue;
      }
      double growth = 100.0 * static_cast<double>(gated.live_bytes - before_bytes) / static_cast<double>(before_bytes);
      if (growth > limit) {
        ++failed;
        result.checks.push_back({"max-growth", false,
                                 fmt::format("{} {} is {:+.0f}% over the baseline's {} > {:.0f}%", gated.name,
                                             format_bytes(gated.live_bytes), growth, format_bytes(before_bytes), limit)});
      }
    }
    if (failed == 0) {
      result.checks.push_back({"max-growth", true,
                               fmt::format("no leak group grew more than {:.0f}% over the baseline {}", limit,
                                           options.baseline->path)});
    }
  }
  return result;
}

}  // namespace leakscope::report
