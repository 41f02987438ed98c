#include "report/gate_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/frame_roles.h"
#include "report/leak_check.h"
#include "report/site_format.h"
#include "report/text_layout.h"
#include "report/units.h"

namespace leakscope::report {
namespace {

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no place for other control characters.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

std::string gated_line(const char* label, const GatedGroup& group) {
  bool whole = group.live_bytes == 0;
  int64_t bytes = whole ? group.left_out_bytes : group.live_bytes;
  std::string line = fmt::format("{} {}: {}", label, group.name, format_bytes(bytes));
  // A sampled estimate says how good it is, as the report does.
  if (group.relative_error >= 0.005) line += fmt::format(" (±{:.0f}%)", std::min(100.0, 100 * group.relative_error));
  if (!whole) {
    line += fmt::format(", {}{}/min", group.growth_bytes_per_min >= 0 ? "+" : "",
                        format_bytes(static_cast<int64_t>(group.growth_bytes_per_min)));
  }
  if (group.older_than_freed_bytes > 0) {
    line += fmt::format(" · {} older than anything it freed", format_bytes(group.older_than_freed_bytes));
  }
  if (group.freed_at_exit_bytes > 0) {
    line += fmt::format(" · freed {}: {}", group.freed_when, format_bytes(group.freed_at_exit_bytes));
  }
  if (whole) {
    line += " · " + group.left_out_by;
  } else if (group.left_out_bytes > 0) {
    line += fmt::format(" · {} more not gated ({})", format_bytes(group.left_out_bytes), group.left_out_by);
  }
  return wrap(line, "      ", "  ");
}

// lost_line() is one group's line of lost blocks: those counted, or, when none is, what was left
// out and why.
std::string lost_line(const LostGroup& group) {
  const LostFigures& lost = group.lost;
  if (!lost.any()) {
    return wrap(fmt::format("not gated, lost {}: {} · {}", group.name, format_exact_bytes(group.left_out_bytes), group.left_out_by),
                "      ", "  ");
  }
  std::string line = fmt::format("lost {}: ", group.name);
  if (lost.bytes != 0 || lost.blocks != 0) line += lost_blocks_text(lost.bytes, lost.blocks) + " directly";
  if (lost.indirect_bytes != 0 || lost.indirect_blocks != 0) {
    line += (lost.bytes != 0 || lost.blocks != 0 ? ", " : "") + lost_blocks_text(lost.indirect_bytes, lost.indirect_blocks) +
            " indirectly";
  }
  if (group.left_out_bytes > 0) line += fmt::format(" · {} more not gated ({})", format_exact_bytes(group.left_out_bytes), group.left_out_by);
  return wrap(line, "      ", "  ");
}

}  // namespace

std::string gate_text(const RunAnalysis& analysis, const GateResult& result, const std::string& file) {
  RunHeader header{analysis.state, analysis.at, analysis.judged, analysis.live_bytes_by_domain, analysis.devices, "judged"};
  std::string out = run_header_text(header, "leakscope check: " + file);
  out += fmt::format("leaks: {} in {} group{}", format_bytes(result.leaked_bytes), result.counted.size(),
                     result.counted.size() == 1 ? "" : "s");
  if (!result.counted.empty()) {
    out += fmt::format(", {}{}/min", result.leak_bytes_per_min >= 0 ? "+" : "",
                       format_bytes(static_cast<int64_t>(result.leak_bytes_per_min)));
  }
  out += "\n";
  for (const GatedGroup& group : result.counted) out += gated_line("leak", group);
  for (const GatedGroup& group : result.runtime) out += gated_line("not gated, leak", group);
  for (const GatedGroup& group : result.suppressed) out += gated_line("not gated, leak", group);
  if (const std::optional<LeakCheck>& check = analysis.state.leak_check()) {
    std::vector<LostGroup> places = lost_places(result.lost);
    out += fmt::format("lost {}: {} in {} place{}\n", leak_check_when(*check), format_exact_bytes(result.lost_bytes.total_bytes()),
                       places.size(), places.size() == 1 ? "" : "s");
    for (const LostGroup& place : places) out += lost_line(place);
    for (const LostGroup& place : lost_places(result.lost_left_out)) out += lost_line(place);
    out += unscanned_mappings_note(*check, analysis.live_bytes_by_domain[static_cast<size_t>(Domain::kMmap)]);
    if (check->threads_missed != 0) {
      out += wrap(fmt::format("note: {} thread{} could not be stopped for the leak check: blocks only they point to may count as lost",
                              check->threads_missed, check->threads_missed == 1 ? "" : "s"),
                  "   ", "");
    }
  }
  if (result.unjudged_groups != 0) {
    std::string named;
    for (size_t i = 0; i < result.unjudged.size() && i < kUnjudgedNamed; ++i) {
      const UnjudgedGroup& group = result.unjudged[i];
      named += fmt::format("{}{} {} ({})", i == 0 ? "" : "; ", frame_name(*analysis.groups[group.group].user_frame, 60),
                           format_bytes(group.live_bytes), group_judgement(analysis, group.group).reason);
    }
    if (result.unjudged_groups > kUnjudgedNamed) named += fmt::format("; and {} more", result.unjudged_groups - kUnjudgedNamed);
    out += wrap(fmt::format("note: {} group{} ({}) could not be judged, and no limit holds them: {}", result.unjudged_groups,
                            result.unjudged_groups == 1 ? "" : "s", format_bytes(result.unjudged_bytes), named),
                "   ", "");
  }
  if (!analysis.at.last.final) {
    out += "note: the stream ends without a final snapshot (the process was killed, or still runs): judged on what it holds\n";
  }
  size_t failed = 0;
  for (const GateCheck& check : result.checks) {
    // One line each, however long: a CI log is searched for them.
    out += fmt::format("{} {}: {}\n", check.passed ? "PASS" : "FAIL", check.limit, check.text);
    failed += check.passed ? 0 : 1;
  }
  if (result.checks.empty()) {
    out += "leakscope check: nothing checked: no limit given applies to this run\n";
  } else if (failed == 0) {
    out += fmt::format("leakscope check: passed ({} check{})\n", result.checks.size(), result.checks.size() == 1 ? "" : "s");
  } else {
    out += fmt::format("leakscope check: FAILED ({} of {} check{})\n", failed, result.checks.size(),
                       result.checks.size() == 1 ? "" : "s");
  }
  return out;
}

std::string gate_junit(const std::vector<std::pair<std::string, const GateResult*>>& suites) {
  size_t tests = 0, failures = 0;
  for (const auto& [file, result] : suites) {
    for (const GateCheck& check : result->checks) {
      ++tests;
      failures += check.passed ? 0 : 1;
    }
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites tests=\"{}\" failures=\"{}\">\n", tests, failures);
  for (const auto& [file, result] : suites) {
    size_t failed = 0;
    for (const GateCheck& check : result->checks) failed += check.passed ? 0 : 1;
    std::string name = suites.size() == 1 ? "leakscope" : "leakscope " + module_base_name(file);
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n",
                       xml_escaped(name), result->checks.size(), failed);
    out += fmt::format("    <properties><property name=\"stream\" value=\"{}\"/></properties>\n", xml_escaped(file));
    for (const GateCheck& check : result->checks) {
      out += fmt::format("    <testcase classname=\"leakscope.check\" name=\"{}\"", xml_escaped(check.limit));
      if (check.passed) {
        out += fmt::format("><system-out>{}</system-out></testcase>\n", xml_escaped(check.text));
      } else {
        out += fmt::format("><failure message=\"{}\">{}</failure></testcase>\n", xml_escaped(check.text),
                           xml_escaped(check.text));
      }
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace leakscope::report
