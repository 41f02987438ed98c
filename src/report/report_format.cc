#include "report/report_format.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/device_layers.h"
#include "report/group_sums.h"
#include "report/json_writer.h"
#include "report/leak_check.h"
#include "report/site_format.h"
#include "report/suppressions.h"
#include "report/text_layout.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;

namespace {

constexpr size_t kSparkWidth = 60;

std::string rate(double bytes_per_min) {
  return fmt::format("{}{}/min", bytes_per_min >= 0 ? "+" : "", format_bytes(static_cast<int64_t>(bytes_per_min)));
}

double host_tracked(const ProcessSample& sample) {
  double total = 0;
  for (size_t d = 0; d < sample.tracked_bytes.size(); ++d) {
    if (is_host_domain(static_cast<Domain>(d))) total += static_cast<double>(sample.tracked_bytes[d]);
  }
  return total;
}

RunHeader header_of(const RunAnalysis& analysis) {
  return {analysis.state, analysis.at, analysis.judged, analysis.live_bytes_by_domain, analysis.devices, "judged"};
}

// section() lists the groups of `kind` (those of at least --min-bytes), at most `top`, and
// counts them all in *count: of the whole stream when it was read in parts (RunAnalysis::
// read_in_parts, where `groups` holds only those shown).
std::vector<size_t> section(const RunAnalysis& analysis, ReportSection kind, const ReportOptions& options, SectionCount* count) {
  std::vector<size_t> groups;
  SectionCounts counts{};
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    const GroupReport& group = analysis.groups[g];
    if (section_of(group) != kind) continue;
    size_t counted = counts[static_cast<size_t>(kind)].groups;
    count_in_sections(group, options.min_bytes, &counts);
    if (counts[static_cast<size_t>(kind)].groups != counted && groups.size() < options.top) groups.push_back(g);
  }
  *count = analysis.read_in_parts ? analysis.read_in_parts->sections[static_cast<size_t>(kind)] : counts[static_cast<size_t>(kind)];
  return groups;
}

// arenas_text() explains the group of CPython's arenas (docs/PYTHON.md): what fills them was not
// recorded one by one in this run; empty for any other group.
std::string arenas_text(const RunAnalysis& analysis, const GroupReport& group) {
  if (!analysis.state.is_marker_stack(analysis.stack_of(analysis.sites[group.parts[0]]), internal::kPythonArenaFrame)) return "";
  return "the Python objects of 512 bytes or less carved from these arenas are not recorded one by one in this run "
         "(sampled mode, python_malloc=0, or PYTHONMALLOC): their growth shows here, not at the lines that make them, "
         "which an exact run names";
}

// runtime_text() says that a group is the runtime's own residue, which `check` never gates.
std::string runtime_text(const GroupReport& group) {
  if (group.runtime == kCachingAllocatorReserve) return reserve_text(group.live_bytes, group.inner_bytes);
  if (group.runtime == kGoRuntimeMappings) {
    return fmt::format("runtime: {}. The Go objects in them are not seen one by one: Go's heap profile names their code "
                       "(runtime/pprof, net/http/pprof). leakscope check leaves them out",
                       group.runtime);
  }
  return fmt::format("runtime: {}, not the program's (leakscope check leaves it out)", group.runtime);
}

std::string blocks_text(const RunAnalysis& analysis, const GroupReport& group) {
  std::string text = fmt::format("{} in {} block{}", format_bytes(group.live_bytes), group.live_blocks,
                                 group.live_blocks == 1 ? "" : "s");
  if (size_t sites = group_site_count(group); sites > 1) text += fmt::format(" of {} sites", sites);
  // A sampled estimate resting on a handful of recorded blocks is a guess: say how good.
  SampledPrecision precision = sampled_precision(analysis, group);
  if (precision.relative_error >= 0.005) {
    text += fmt::format(" (±{:.0f}%: about {:.0f} recorded)", std::min(100.0, 100 * precision.relative_error),
                        std::max(1.0, precision.recorded_blocks));
  } else if (precision.recorded_blocks > 0) {
    text += " (recorded whole)";
  }
  return text;
}

// lost_suffix() is what a group lost at the leak check, for the end of its verdict's line.
std::string lost_suffix(const GroupReport& group) {
  if (!group.lost.any()) return "";
  return " · " + lost_text(group.lost) + (group.lost_runtime == nullptr ? "" : " (the runtime's own)");
}

// lost_finding_text() says where a group's lost blocks were allocated and why they are lost: the
// `lost` finding of a group no verdict called a leak.
std::string lost_finding_text(const RunAnalysis& analysis, const std::string& where, const LostFigures& lost, Verdict verdict) {
  std::string when = leak_check_when(*analysis.state.leak_check());
  std::string text;
  if (lost.bytes != 0 || lost.blocks != 0) {
    text = fmt::format("{} at {} — no pointer to them from any root or block scanned {}", lost_blocks_text(lost.bytes, lost.blocks), where, when);
    if (lost.indirect_bytes != 0 || lost.indirect_blocks != 0) {
      text += fmt::format("; {} more only through them", lost_blocks_text(lost.indirect_bytes, lost.indirect_blocks));
    }
  } else {
    text = fmt::format("{} at {} — pointed to only from lost blocks {}", lost_blocks_text(lost.indirect_bytes, lost.indirect_blocks),
                       where, when);
  }
  if (verdict != Verdict::kUnknown) text += fmt::format(" (judged {})", verdict_name(verdict));
  return text;
}

// A `lost` finding as the text shows it: the groups of one name and verdict together (a frame's
// groups told apart only by their callers read as one place).
struct LostFinding {
  std::string where;
  Verdict verdict = Verdict::kUnknown;
  LostFigures lost;
};

// lost_findings() is the `lost` finding's groups that --min-bytes keeps (on their lost bytes),
// most lost bytes first.
std::vector<size_t> lost_findings(const RunAnalysis& analysis, const ReportOptions& options) {
  std::vector<size_t> groups;
  for (size_t g : analysis.lost_groups) {
    if (analysis.groups[g].lost.total_bytes() >= static_cast<uint64_t>(std::max<int64_t>(options.min_bytes, 0))) groups.push_back(g);
  }
  return groups;
}

// lost_findings_by_place() merges `groups` by name and verdict, most lost bytes first.
std::vector<LostFinding> lost_findings_by_place(const RunAnalysis& analysis, const std::vector<size_t>& groups) {
  std::vector<LostFinding> findings;
  std::map<std::pair<std::string, Verdict>, size_t> index;
  for (size_t g : groups) {
    const GroupReport& group = analysis.groups[g];
    std::string where = frame_name(*group.user_frame, 60);
    auto [found, added] = index.emplace(std::make_pair(where, group.verdict), findings.size());
    if (added) findings.push_back({where, group.verdict, {}});
    findings[found->second].lost += group.lost;
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const LostFinding& a, const LostFinding& b) { return a.lost.total_bytes() > b.lost.total_bytes(); });
  return findings;
}

std::string domains_text(const RunAnalysis& analysis, const GroupReport& group) {
  std::string domains;
  auto add = [&](Domain domain) {
    const char* name = domain_name(domain);
    if (domains.find(name) == std::string::npos) domains += std::string(domains.empty() ? "" : "+") + name;
  };
  if (group.summed != nullptr) {
    for (const SummedPart& part : group.summed->parts) add(part.domain);
  } else {
    for (uint32_t part : group.parts) add(analysis.domain_of(analysis.sites[part]));
  }
  return domains;
}

// freed_at_exit_text() says what of a group's bytes was gone by the end of the stream: at exit,
// or, when main returned, as it did (its locals) or shortly before.
std::string freed_at_exit_text(const RunAnalysis& analysis, int64_t freed, int64_t live) {
  if (analysis.teardown.mark == 0 || analysis.at.index == analysis.at.count) return "";
  const char* when = freed_when(analysis);
  if (freed == 0) return fmt::format(" · not freed {}", when);
  return fmt::format(" · freed {}: {}{}", when, format_bytes(freed), freed >= live ? " (all)" : "");
}

std::string counts_text(const RunAnalysis& analysis, const GroupReport& group) {
  return fmt::format("{} allocations ({} temporary){}", group.allocations, group.temporary_allocations,
                     freed_at_exit_text(analysis, group.freed_at_exit_bytes, group.live_bytes));
}

std::string owners_of_group(const RunAnalysis& analysis, const GroupReport& group) {
  if (group_site_count(group) == 1) return owners_text(site_summary(analysis, group.parts[0]));
  SiteSummary merged;
  if (group.summed != nullptr) {
    for (const auto& [thread, share] : group.summed->threads) merged.threads.push_back(share);
    for (const auto& [name, share] : group.summed->tasks) merged.tasks.push_back(share);
  }
  for (uint32_t part : group.summed != nullptr ? std::span<const uint32_t>() : group.parts) {
    SiteSummary summary = site_summary(analysis, part);
    for (const ThreadShare& share : summary.threads) {
      auto found = std::find_if(merged.threads.begin(), merged.threads.end(),
                                [&](const ThreadShare& t) { return t.thread == share.thread; });
      if (found == merged.threads.end()) {
        merged.threads.push_back(share);
      } else {
        found->live_bytes += share.live_bytes;
        found->live_blocks += share.live_blocks;
      }
    }
    for (const TaskShare& share : summary.tasks) {
      auto found = std::find_if(merged.tasks.begin(), merged.tasks.end(), [&](const TaskShare& t) { return t.name == share.name; });
      if (found == merged.tasks.end()) {
        merged.tasks.push_back(share);
      } else {
        found->live_bytes += share.live_bytes;
        found->live_blocks += share.live_blocks;
      }
    }
  }
  // Owners that hold alike are in the order of their ids, however the parts came.
  std::sort(merged.threads.begin(), merged.threads.end(), [](const ThreadShare& a, const ThreadShare& b) {
    return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.thread < b.thread;
  });
  std::sort(merged.tasks.begin(), merged.tasks.end(), [](const TaskShare& a, const TaskShare& b) {
    return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.name < b.name;
  });
  return owners_text(merged);
}

std::string cut_at_depth_text(const RunAnalysis& analysis) {
  uint32_t depth = analysis.state.process().depth;
  if (depth >= internal::kMaxStackDepth) {
    return fmt::format("no frame of the program's own in the {} frames kept, the most leakscope keeps", depth);
  }
  return fmt::format("no frame of the program's own in the {} frames kept (the stack was cut at --depth {}); rerun with "
                     "--depth {} to name it", depth, depth, std::min<uint32_t>(internal::kMaxStackDepth, depth * 2));
}

nlohmann::json judgement_json(const SiteJudgement& j, nlohmann::json entry) {
  entry["verdict"] = verdict_name(j.verdict);
  entry["confidence"] = j.confidence;
  entry["leak_entropy"] = j.leak_entropy;
  entry["growth_bytes_per_min"] = j.growth_bytes_per_min;
  entry["mann_kendall_z"] = j.mann_kendall_z;
  entry["relative_growth"] = j.relative_growth;
  entry["median_birth_fraction"] = j.median_birth_fraction;
  entry["turnover"] = j.turnover;
  entry["last_rise_s"] = j.last_rise_s;
  entry["samples"] = j.samples;
  entry["reason"] = j.reason;
  return entry;
}

nlohmann::json user_frame_json(const GroupReport& group) {
  return group.has_user_frame ? frame_json(*group.user_frame) : nlohmann::json();
}

nlohmann::json site_analysis_json(const RunAnalysis& analysis, size_t index, const FrameFolder& folder) {
  SiteDetail site = site_detail(analysis, index);
  nlohmann::json entry = judgement_json(site.judgement, site_json(site.summary, *analysis.symbolizer, folder));
  entry["first_seen_s"] = site.first_seen_s;
  entry["median_age_s"] = site.median_age_s;
  entry["freed_bytes_by_lifetime"] = site.freed_bytes_by_lifetime;
  entry["freed_at_exit_bytes"] = site.freed_at_exit_bytes;
  entry["group"] = group_id(analysis, site.group);
  entry["first_user_frame"] = user_frame_json(analysis.groups[site.group]);
  add_lost_json(site.lost, &entry);
  entry["from_leak_check"] = site.from_leak_check;
  return entry;
}

// group_item() gives group `index` to `items`, its parts one at a time: a group may have hundreds
// of thousands.
void group_item(const RunAnalysis& analysis, size_t index, JsonItems& items) {
  const GroupReport& group = analysis.groups[index];
  nlohmann::json entry;
  entry["id"] = group_id(analysis, index);
  entry["first_user_frame"] = user_frame_json(group);
  entry["called_from"] = group.caller_frame != nullptr ? frame_json(*group.caller_frame) : nlohmann::json();
  entry["frame"] = frame_json(*group.user_frame);
  entry["cut_at_depth"] = group.cut_at_depth;
  entry["live_bytes"] = group.live_bytes;
  entry["live_blocks"] = group.live_blocks;
  // Sampled runs: about how many recorded allocations the heap figures rest on, and their
  // relative standard error; null in exact mode.
  SampledPrecision precision = sampled_precision(analysis, group);
  bool sampled = precision.recorded_blocks > 0;
  entry["recorded_blocks"] = sampled ? nlohmann::json(std::llround(precision.recorded_blocks)) : nlohmann::json();
  entry["relative_error"] = sampled ? nlohmann::json(precision.relative_error) : nlohmann::json();
  entry["allocations"] = group.allocations;
  entry["temporary_allocations"] = group.temporary_allocations;
  entry["freed_at_exit_bytes"] = group.freed_at_exit_bytes;
  int64_t older = shown_older_than_freed_bytes(analysis, group);
  entry["older_than_freed_bytes"] = older >= 0 ? nlohmann::json(older) : nlohmann::json();
  entry["first_seen_s"] = group.first_seen_s;
  entry["runtime"] = group.runtime == nullptr ? nlohmann::json() : nlohmann::json(group.runtime);
  add_lost_json(group.lost, &entry);
  entry["lost_runtime"] = group.lost_runtime == nullptr ? nlohmann::json() : nlohmann::json(group.lost_runtime);
  items.object(judgement_json(group_judgement(analysis, index), entry), {{"parts", [&](JsonItems& parts) {
                 if (group.summed != nullptr) {
                   for (const SummedPart& part : group.summed->parts) {
                     parts.item({{"site", part.site}, {"domain", domain_name(part.domain)}, {"live_bytes", part.live_bytes},
                                 {"live_blocks", part.live_blocks}});
                   }
                   return;
                 }
                 for (uint32_t part : group.parts) {
                   const SiteReport& site = analysis.sites[part];
                   const CapturedSite& taken = analysis.capture_of(site);
                   parts.item({{"site", analysis.state.stream_site_id(taken.site)}, {"domain", domain_name(analysis.domain_of(site))},
                               {"live_bytes", taken.live_bytes}, {"live_blocks", taken.live_blocks}});
                 }
               }}});
}

// report_members() is the report document but for its groups and sites.
nlohmann::json report_members(const RunAnalysis& analysis, const ReportOptions& options) {
  nlohmann::json document = run_header_json(header_of(analysis));
  nlohmann::json findings = nlohmann::json::array();
  for (const ResidencyFinding& finding : analysis.findings) {
    findings.push_back({{"kind", finding.kind},
                        {"rss_growth_bytes_per_min", finding.rss_growth_bytes_per_min},
                        {"tracked_growth_bytes_per_min", finding.tracked_growth_bytes_per_min},
                        {"untracked_growth_bytes_per_min", finding.untracked_growth_bytes_per_min},
                        {"mann_kendall_z", finding.mann_kendall_z},
                        {"text", finding.text}});
  }
  std::vector<size_t> lost = lost_findings(analysis, options);
  for (size_t i = 0; i < lost.size() && i < options.top; ++i) {
    const GroupReport& group = analysis.groups[lost[i]];
    nlohmann::json finding = {{"kind", "lost"}, {"group", group_id(analysis, lost[i])}};
    add_lost_json(group.lost, &finding);
    finding["text"] = lost_finding_text(analysis, frame_name(*group.user_frame, 60), group.lost, group.verdict);
    findings.push_back(finding);
  }
  document["findings"] = findings;
  document["leak_check"] = leak_check_json(analysis.state);
  nlohmann::json residency = nlohmann::json::array();
  for (const ProcessSample& sample : analysis.residency) {
    nlohmann::json tracked = nlohmann::json::object();
    for (size_t d = 0; d < sample.tracked_bytes.size(); ++d) {
      if (sample.tracked_bytes[d] != 0) tracked[domain_name(static_cast<Domain>(d))] = sample.tracked_bytes[d];
    }
    residency.push_back({{"time_s", sample.time_s}, {"rss_bytes", sample.rss_bytes}, {"pss_bytes", sample.pss_bytes},
                         {"anon_bytes", sample.anon_bytes}, {"file_bytes", sample.file_bytes},
                         {"tracked_bytes", tracked}});
  }
  document["residency"] = residency;
  auto owners_json = [](const std::vector<OwnerReport>& owners, bool threads) {
    nlohmann::json list = nlohmann::json::array();
    for (const OwnerReport& owner : owners) {
      nlohmann::json entry = {{"name", owner.name.empty() && !threads ? nlohmann::json() : nlohmann::json(owner.name)},
                              {"live_bytes", owner.live_bytes},
                              {"growth_bytes_per_min", owner.growth_bytes_per_min},
                              {"mann_kendall_z", owner.mann_kendall_z},
                              {"growing", owner.growing}};
      if (threads) entry["tid"] = owner.tid;
      list.push_back(entry);
    }
    return list;
  };
  document["by_task"] = owners_json(analysis.by_task, false);
  document["by_thread"] = owners_json(analysis.by_thread, true);
  auto peak_json = [&](const PeakReport& peak) {
    nlohmann::json holders = nlohmann::json::array();
    for (const PeakReport::Holder& holder : peak.holders) {
      if (holders.size() >= options.top) break;
      holders.push_back({{"name", frame_name(*holder.frame, 40)}, {"bytes", holder.bytes},
                         {"group", holder.group != SIZE_MAX ? nlohmann::json(group_id(analysis, holder.group)) : nlohmann::json()}});
    }
    return nlohmann::json{{"snapshot", peak.snapshot}, {"time_s", peak.time_s}, {"tracked_bytes", peak.tracked_bytes}, {"holders", holders}};
  };
  document["peak"] = peak_json(analysis.peak);
  document["device_peak"] = analysis.device_peak.snapshot != 0 ? peak_json(analysis.device_peak) : nlohmann::json();
  nlohmann::json device_peaks = nlohmann::json::array();
  for (const DevicePeak& peak : analysis.device_peaks) {
    device_peaks.push_back({{"device", peak.device < 0 ? nlohmann::json() : nlohmann::json(peak.device)},
                            {"bytes", peak.bytes},
                            {"snapshot", peak.snapshot},
                            {"time_s", peak.time_s}});
  }
  document["device_peaks"] = device_peaks;
  document["teardown"] = analysis.teardown.mark == 0
                             ? nlohmann::json()
                             : nlohmann::json{{"snapshot", analysis.teardown.mark},
                                              {"begin_s", analysis.teardown.begin_s},
                                              {"end_s", analysis.teardown.end_s},
                                              {"freed_bytes", analysis.teardown.freed_bytes}};
  // How many of each verdict there are in all, whatever --top and --min-bytes left out.
  VerdictCounts counts = analysis.read_in_parts ? analysis.read_in_parts->verdicts : verdict_counts(analysis);
  nlohmann::json totals = {{"groups", nlohmann::json::object()}, {"sites", nlohmann::json::object()}};
  for (Verdict verdict : {Verdict::kLeak, Verdict::kCache, Verdict::kStartup, Verdict::kUnknown}) {
    totals["groups"][verdict_name(verdict)] = counts.groups[static_cast<size_t>(verdict_rank(verdict))];
    totals["sites"][verdict_name(verdict)] = counts.sites[static_cast<size_t>(verdict_rank(verdict))];
  }
  document["totals"] = totals;
  return document;
}

// report_arrays() is the document's groups and sites, each made as it is written: with --top
// large, every site of a process with hundreds of thousands.
JsonArrays report_arrays(const RunAnalysis& analysis, const ReportOptions& options, const FrameFolder& folder) {
  static constexpr Verdict kVerdicts[] = {Verdict::kLeak, Verdict::kCache, Verdict::kStartup, Verdict::kUnknown};
  return {{"groups",
           [&](JsonItems& items) {
             for (Verdict verdict : kVerdicts) {
               size_t shown = 0;
               for (size_t g = 0; g < analysis.groups.size(); ++g) {
                 const GroupReport& group = analysis.groups[g];
                 if (group.verdict != verdict || group.live_bytes < options.min_bytes) continue;
                 if (shown++ == options.top) break;
                 group_item(analysis, g, items);
               }
             }
           }},
          {"sites", [&](JsonItems& items) {
             for (Verdict verdict : kVerdicts) {
               size_t shown = 0;
               for (size_t i = 0; i < analysis.sites.size(); ++i) {
                 const SiteReport& site = analysis.sites[i];
                 if (site.verdict != verdict || analysis.capture_of(site).live_bytes < options.min_bytes) continue;
                 if (shown++ == options.top) break;
                 items.item(site_analysis_json(analysis, i, folder));
               }
             }
           }}};
}

}  // namespace

std::string sparkline(const std::vector<double>& values, size_t width, double scale) {
  static const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty() || scale <= 0) return std::string();
  std::string line;
  size_t columns = std::min(width, values.size());
  for (size_t column = 0; column < columns; ++column) {
    size_t begin = column * values.size() / columns, end = (column + 1) * values.size() / columns;
    double peak = 0;
    for (size_t i = begin; i < std::max(end, begin + 1); ++i) peak = std::max(peak, values[i]);
    int level = static_cast<int>(std::lround(std::clamp(peak / scale, 0.0, 1.0) * 7));
    line += kBars[level];
  }
  return line;
}

nlohmann::json report_json(const RunAnalysis& analysis, const ReportOptions& options) {
  FrameFolder folder(options.fold);
  return json_of(report_members(analysis, options), report_arrays(analysis, options, folder));
}

void write_report_json(const RunAnalysis& analysis, const ReportOptions& options, std::FILE* out) {
  FrameFolder folder(options.fold);
  write_json(out, report_members(analysis, options), report_arrays(analysis, options, folder));
}

// peak_holders_text() names what held `peak`, each with the verdict of its group now. Holders of
// one name (a helper that allocates for several callers, each caller a group) say their caller,
// and those still alike a module.
std::string peak_holders_text(const RunAnalysis& analysis, const PeakReport& peak) {
  size_t shown = std::min(peak.holders.size(), kPeakHoldersShown);
  std::vector<std::string> names;
  for (size_t i = 0; i < shown; ++i) names.push_back(frame_name(*peak.holders[i].frame, 40));
  // tell_apart() adds more(holder) to each name that another shown holder's still reads as.
  auto tell_apart = [&](auto&& more) {
    std::vector<std::string> told = names;
    for (size_t i = 0; i < shown; ++i) {
      if (std::count(names.begin(), names.end(), names[i]) > 1) told[i] += more(peak.holders[i]);
    }
    names = std::move(told);
  };
  auto caller_of = [&](const PeakReport::Holder& holder) {
    return holder.group != SIZE_MAX ? analysis.groups[holder.group].caller_frame : nullptr;
  };
  tell_apart([&](const PeakReport::Holder& holder) -> std::string {
    const SymbolizedFrame* caller = caller_of(holder);
    return caller != nullptr ? " from " + frame_name(*caller, 40) : "";
  });
  // The module of the caller named (one source built into two plugins calls one helper), else the
  // holder's own.
  tell_apart([&](const PeakReport::Holder& holder) {
    const SymbolizedFrame* caller = caller_of(holder);
    return " in " + module_base_name((caller != nullptr ? caller : holder.frame)->module);
  });
  std::string holders;
  for (size_t i = 0; i < shown; ++i) {
    const PeakReport::Holder& holder = peak.holders[i];
    const std::string& name = names[i];
    std::string verdict = " (freed since)";
    if (holder.group != SIZE_MAX && analysis.groups[holder.group].live_bytes > 0) {
      const GroupReport& now = analysis.groups[holder.group];
      // A burst whose function keeps a few strings: what it held at the peak is what went.
      verdict = now.live_bytes * 100 < holder.bytes
                    ? fmt::format(" (freed since but for {}, {})", format_bytes(now.live_bytes), verdict_name(now.verdict))
                    : fmt::format(" ({})", verdict_name(now.verdict));
    }
    holders += fmt::format("{}{} {}{}", holders.empty() ? "" : " · ", name, format_bytes(holder.bytes), verdict);
  }
  return holders;
}

std::string report_text(const RunAnalysis& analysis, const ReportOptions& options) {
  std::string out = run_header_text(header_of(analysis), "leakscope report");
  if (analysis.state.leak_check()) {
    out += leak_check_text(*analysis.state.leak_check());
    out += unscanned_mappings_note(*analysis.state.leak_check(), analysis.live_bytes_by_domain[static_cast<size_t>(Domain::kMmap)]);
  }
  const TeardownReport& teardown = analysis.teardown;
  if (teardown.mark != 0 && analysis.at.index < analysis.at.count) {
    // A teardown of a few milliseconds shows as one: "from 6.5 s to 6.5 s" says nothing.
    int digits = teardown.end_s - teardown.begin_s < 0.1 ? 3 : 1;
    out += wrap(fmt::format("teardown from {:.{}f} s to {:.{}f} s freed {} of what was judged live (\"freed {}\")",
                            teardown.begin_s, digits, teardown.end_s, digits, format_bytes(teardown.freed_bytes),
                            freed_when(analysis)),
                "   ", "");
  }

  std::vector<double> rss, tracked;
  for (const ProcessSample& sample : analysis.residency) {
    rss.push_back(static_cast<double>(sample.rss_bytes));
    tracked.push_back(host_tracked(sample));
  }
  if (!rss.empty()) {
    double scale = std::max(*std::max_element(rss.begin(), rss.end()), *std::max_element(tracked.begin(), tracked.end()));
    out += fmt::format("\nRSS      {}  {}\n", sparkline(rss, kSparkWidth, scale), format_bytes(static_cast<int64_t>(rss.back())));
    out += fmt::format("tracked  {}  {}\n", sparkline(tracked, kSparkWidth, scale), format_bytes(static_cast<int64_t>(tracked.back())));
  }
  // The largest of sampled totals is the largest of their noise too: it reads high.
  const char* estimate = analysis.state.process().sample_interval != 0 ? " (sampled: the largest of estimates, it may read high)" : "";
  if (analysis.peak.snapshot != 0) {
    out += wrap(fmt::format("peak: {} tracked{} at {:.1f} s (snapshot {}): {}", format_bytes(analysis.peak.tracked_bytes),
                            estimate, analysis.peak.time_s, analysis.peak.snapshot, peak_holders_text(analysis, analysis.peak)),
                "      ", "");
  }
  if (analysis.device_peak.snapshot != 0) {
    const PeakReport& device = analysis.device_peak;
    out += wrap(fmt::format("device peak: {} in tensors and device blocks at {:.1f} s (snapshot {}): {}",
                            format_bytes(device.tracked_bytes), device.time_s, device.snapshot, peak_holders_text(analysis, device)),
                "      ", "");
  }
  if (!analysis.device_peaks.empty()) {
    std::string peaks;
    for (const DevicePeak& peak : analysis.device_peaks) {
      peaks += fmt::format("{}device {} {} at {:.1f} s (snapshot {})", peaks.empty() ? "" : " · ",
                           peak.device < 0 ? std::string("?") : std::to_string(peak.device), format_bytes(peak.bytes), peak.time_s,
                           peak.snapshot);
    }
    out += wrap("most taken from the driver, by device: " + peaks, "      ", "");
  }
  for (const ResidencyFinding& finding : analysis.findings) out += "\n" + wrap("Residency: " + finding.text, "");
  std::vector<LostFinding> lost = lost_findings_by_place(analysis, lost_findings(analysis, options));
  if (!lost.empty()) out += "\n";
  for (size_t i = 0; i < lost.size() && i < options.top; ++i) {
    out += wrap("Lost: " + lost_finding_text(analysis, lost[i].where, lost[i].lost, lost[i].verdict), "   ", "");
  }
  if (lost.size() > options.top) {
    size_t more = lost.size() - options.top;
    out += fmt::format("Lost: and at {} more place{} (--top N shows more)\n", more, more == 1 ? "" : "s");
  }
  auto owner_line = [](const char* title, const std::vector<OwnerReport>& owners, const char* unnamed) {
    std::map<std::string, int> named;  // threads that share a name are told apart by tid
    for (const OwnerReport& owner : owners) ++named[owner.name];
    constexpr size_t kOwnersShown = 6;
    std::string line;
    size_t shown = 0, more = 0;
    int64_t more_bytes = 0;
    for (const OwnerReport& owner : owners) {
      if (owner.live_bytes <= 0) continue;
      if (shown == kOwnersShown) {
        ++more;
        more_bytes += owner.live_bytes;
        continue;
      }
      ++shown;
      std::string name = owner.name.empty() ? unnamed : one_line(owner.name);
      if (owner.tid != 0 && named[owner.name] > 1) name += fmt::format(" (tid {})", owner.tid);
      line += fmt::format("{}{} {}{}", line.empty() ? "" : " · ", name, format_bytes(owner.live_bytes),
                          owner.growing ? " (" + rate(owner.growth_bytes_per_min) + ")" : "");
    }
    if (more != 0) line += fmt::format(" · and {} more, {} (--format json lists them)", more, format_bytes(more_bytes));
    return line.empty() ? std::string() : wrap(std::string(title) + line, "   ", "");
  };
  out += "\n" + owner_line("by task: ", analysis.by_task, "(no task)");
  out += owner_line("by thread: ", analysis.by_thread, "?");

  FrameFolder folder(options.fold);
  Symbolizer& symbolizer = *analysis.symbolizer;
  int leak_frames = options.frames > 0 ? options.frames : 6;
  int other_frames = options.frames > 0 ? options.frames : 1;
  SectionCount count;
  // Residue that grows (a thread's TLS block, pytest's records) is not the program's leak: `check`
  // leaves it out, and it follows the suspects in a short section of its own.
  auto leaks = section(analysis, ReportSection::kLeaks, options, &count);
  size_t total = count.groups;
  out += fmt::format("\nLeak suspects: {}{}\n", total, total > leaks.size() ? fmt::format(" (top {} shown)", leaks.size()) : "");
  int rank = 0;
  for (size_t g : leaks) {
    const GroupReport& group = analysis.groups[g];
    SiteJudgement j = group_judgement(analysis, g);
    out += "\n" + wrap(fmt::format("#{} leak, confidence {:.2f} · {} {} · {} · leak entropy {:.2f}{}", ++rank, j.confidence,
                                   domains_text(analysis, group), blocks_text(analysis, group), rate(j.growth_bytes_per_min),
                                   j.leak_entropy, lost_suffix(group)),
                       "   ", "");
    if (group.has_user_frame) out += fmt::format("   in {}\n", frame_text(*group.user_frame, kWidth - 6));
    if (group.caller_frame != nullptr) out += fmt::format("   called from {}\n", frame_text(*group.caller_frame, kWidth - 15));
    if (group.runtime != nullptr) out += wrap(runtime_text(group), "   ");
    if (std::string arenas = arenas_text(analysis, group); !arenas.empty()) out += wrap(arenas, "   ");
    if (group.cut_at_depth) out += wrap(cut_at_depth_text(analysis), "   ");
    out += wrap(fmt::format("first seen {:.1f} s · {}", group.first_seen_s, j.reason), "   ");
    if (int64_t older = shown_older_than_freed_bytes(analysis, group); older > 0) {
      out += wrap(fmt::format("{} of it older than anything it freed: the rest is as young as blocks it let go of, "
                              "as a cache's turnover is",
                              format_bytes(older)),
                  "   ");
    }
    out += wrap(counts_text(analysis, group), "   ");
    out += wrap(owners_of_group(analysis, group), "   ");
    // The largest part's stack first, which the leak's stack lines show too.
    std::vector<std::vector<SymbolizedFrame>> stacks{folder.fold(symbolizer.stack(analysis.stack_of(analysis.sites[group.parts[0]])))};
    if (size_t sites = group_site_count(group); sites > 1) {
      size_t shown = std::min(group.parts.size(), kPartsShown);
      for (size_t i = 1; i < shown; ++i) {
        stacks.push_back(folder.fold(symbolizer.stack(analysis.stack_of(analysis.sites[group.parts[i]]))));
      }
      // A part judged otherwise on its own says so (a cache's bucket array growing in its first
      // second); once for them all when every part is (a leak of one block at each of many sites).
      // Said once only when every part is known to read so, not just those shown (a summed group
      // keeps only its largest).
      Verdict own_verdict = analysis.sites[group.parts[0]].verdict;
      bool all_alike = group.parts.size() == sites;
      for (size_t part : group.parts) all_alike &= analysis.sites[part].verdict == own_verdict;
      bool said_once = shown > 1 && all_alike && own_verdict != j.verdict;
      if (said_once) out += fmt::format("   parts, each judged {} on its own:\n", verdict_name(own_verdict));
      std::vector<std::string> lines;
      size_t widest = 0;
      for (size_t i = 0; i < shown; ++i) {
        const SiteReport& site = analysis.sites[group.parts[i]];
        const CapturedSite& part = analysis.capture_of(site);
        std::string own = site.verdict != j.verdict && !said_once ? fmt::format(" ({} on its own)", verdict_name(site.verdict)) : "";
        lines.push_back(fmt::format("   {} {} {} in {} block{}{}", i == 0 && !said_once ? "parts:" : "      ",
                                    domain_name(analysis.domain_of(site)), format_bytes(part.live_bytes), part.live_blocks,
                                    part.live_blocks == 1 ? "" : "s", own));
        widest = std::max(widest, text_columns(lines.back()));
      }
      // The labels are made to one width, so that a name cut to fit is cut alike on every line.
      std::vector<std::string> labels = part_labels(stacks, std::max<size_t>(kWidth - std::min(kWidth, widest + 3), 24));
      for (size_t i = 0; i < shown; ++i) out += lines[i] + (labels[i].empty() ? "" : " · " + labels[i]) + "\n";
      if (sites > shown) out += fmt::format("          and {} more site{}\n", sites - shown, sites - shown == 1 ? "" : "s");
      out += "   stack of the largest part:\n";
    }
    const std::vector<SymbolizedFrame>& frames = stacks[0];
    for (size_t i = 0; i < frames.size() && static_cast<int>(i) < leak_frames; ++i) {
      out += fmt::format("   {} {}\n", i == 0 ? "at" : "by", frame_text(frames[i], kWidth - 6));
    }
    if (frames.size() > static_cast<size_t>(leak_frames)) {
      out += fmt::format("   ... {} more frames (--frames N shows more)\n", frames.size() - leak_frames);
    }
  }

  struct Section {
    ReportSection kind;
    const char* title;
  };
  for (Section kind : {Section{ReportSection::kRuntimeGrowing, "The runtime's own, growing (check leaves it out)"},
                       Section{ReportSection::kCaches, "Caches and working sets (bounded, with turnover)"},
                       Section{ReportSection::kStartup, "Startup residents (born early, flat)"},
                       Section{ReportSection::kNotJudged, "Not judged"}}) {
    auto groups = section(analysis, kind.kind, options, &count);
    total = count.groups;
    if (total + count.empty_groups == 0) continue;
    out += fmt::format("\n{}: {}{}\n", kind.title, total + count.empty_groups,
                       total > groups.size() ? fmt::format(" (top {} shown)", groups.size()) : "");
    for (size_t g : groups) {
      const GroupReport& group = analysis.groups[g];
      SiteJudgement judgement = group_judgement(analysis, g);
      // A bounded cache's or a start-up resident's slope is its fill, not growth: a rate beside
      // "bounded" only misleads.
      bool bounded = group.verdict == Verdict::kCache || group.verdict == Verdict::kStartup;
      std::string growth = bounded ? "" : " · " + rate(judgement.growth_bytes_per_min);
      out += wrap(fmt::format("{} {} · leak entropy {:.2f}{}{}{}", domains_text(analysis, group), blocks_text(analysis, group),
                              judgement.leak_entropy, growth,
                              freed_at_exit_text(analysis, group.freed_at_exit_bytes, group.live_bytes), lost_suffix(group)),
                  "      ", "  ");
      if (group.has_user_frame) out += fmt::format("      in {}\n", frame_text(*group.user_frame, kWidth - 9));
      if (group.caller_frame != nullptr) out += fmt::format("      called from {}\n", frame_text(*group.caller_frame, kWidth - 18));
      if (group.runtime != nullptr) out += wrap(runtime_text(group), "      ");
      if (std::string arenas = arenas_text(analysis, group); !arenas.empty()) out += wrap(arenas, "      ");
      if (group.cut_at_depth) out += wrap(cut_at_depth_text(analysis), "      ");
      const auto frames = folder.fold(symbolizer.stack(analysis.stack_of(analysis.sites[group.parts[0]])));
      bool named = group.has_user_frame && !frames.empty() && frames[0].address == group.user_frame->address &&
                   frames[0].function == group.user_frame->function && other_frames == 1;
      for (size_t i = named ? 1 : 0; i < frames.size() && static_cast<int>(i) < other_frames; ++i) {
        out += fmt::format("      {} {}\n", i == 0 ? "at" : "by", frame_text(frames[i], kWidth - 9));
      }
      out += wrap(judgement.reason, "      ");
    }
    if (count.empty_groups != 0) {
      out += wrap(fmt::format("{}{} group{} of blocks that hold 0 bytes ({} block{}: malloc(0), empty buffers): nothing to judge",
                              groups.empty() ? "" : "and ", count.empty_groups, count.empty_groups == 1 ? "" : "s",
                              count.empty_blocks, count.empty_blocks == 1 ? "" : "s"),
                  "  ", "  ");
    }
  }
  return out;
}

}  // namespace leakscope::report
