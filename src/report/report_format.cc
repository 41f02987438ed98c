#include "report/report_format.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/site_format.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;

namespace {

constexpr size_t kWidth = 100;
constexpr size_t kSparkWidth = 60;

// wrap() breaks `text` into lines of at most kWidth columns, each starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent) {
  std::string out, line = indent;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (line.size() > indent.size() && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = indent;
    }
    if (line.size() > indent.size()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (line.size() > indent.size()) out += line + "\n";
  return out;
}

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

std::vector<const SiteReport*> section(const RunAnalysis& analysis, Verdict verdict, const ReportOptions& options,
                                       size_t* total) {
  std::vector<const SiteReport*> sites;
  *total = 0;
  for (const SiteReport& site : analysis.sites) {
    if (site.judgement.verdict != verdict || site.summary.live_bytes < options.min_bytes) continue;
    ++*total;
    if (sites.size() < options.top) sites.push_back(&site);
  }
  return sites;
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

nlohmann::json site_analysis_json(const SiteReport& site, Symbolizer& symbolizer, const FrameFolder& folder) {
  nlohmann::json entry = site_json(site.summary, symbolizer, folder);
  const SiteJudgement& j = site.judgement;
  entry["verdict"] = verdict_name(j.verdict);
  entry["confidence"] = j.confidence;
  entry["leak_entropy"] = j.leak_entropy;
  entry["growth_bytes_per_min"] = j.growth_bytes_per_min;
  entry["first_seen_s"] = site.first_seen_s;
  entry["median_age_s"] = site.median_age_s;
  entry["freed_bytes_by_lifetime"] = site.freed_bytes_by_lifetime;
  entry["mann_kendall_z"] = j.mann_kendall_z;
  entry["relative_growth"] = j.relative_growth;
  entry["median_birth_fraction"] = j.median_birth_fraction;
  entry["samples"] = j.samples;
  entry["reason"] = j.reason;
  return entry;
}

nlohmann::json report_json(const RunAnalysis& analysis, Symbolizer& symbolizer, const ReportOptions& options) {
  nlohmann::json document = run_header_json(analysis.state);
  nlohmann::json findings = nlohmann::json::array();
  for (const ResidencyFinding& finding : analysis.findings) {
    findings.push_back({{"kind", finding.kind},
                        {"rss_growth_bytes_per_min", finding.rss_growth_bytes_per_min},
                        {"tracked_growth_bytes_per_min", finding.tracked_growth_bytes_per_min},
                        {"untracked_growth_bytes_per_min", finding.untracked_growth_bytes_per_min},
                        {"mann_kendall_z", finding.mann_kendall_z},
                        {"text", finding.text}});
  }
  document["findings"] = findings;
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
  nlohmann::json sites = nlohmann::json::array();
  FrameFolder folder(options.fold);
  for (Verdict verdict : {Verdict::kLeak, Verdict::kCache, Verdict::kStartup, Verdict::kUnknown}) {
    size_t total = 0;
    for (const SiteReport* site : section(analysis, verdict, options, &total)) {
      sites.push_back(site_analysis_json(*site, symbolizer, folder));
    }
  }
  document["sites"] = sites;
  return document;
}

std::string report_text(const RunAnalysis& analysis, Symbolizer& symbolizer, const ReportOptions& options) {
  const RunState& state = analysis.state;
  const SnapshotInfo& last = state.last_snapshot();
  std::string out;
  out += fmt::format("leakscope report: {} (pid {})\n", state.process().exe, state.process().pid);
  out += fmt::format("{}, {} snapshots, ended by {} · RSS {} (peak {}) · PSS {}\n", format_seconds(last.time_ns),
                     state.snapshot_count(), ended_by(last), format_bytes(static_cast<int64_t>(last.rss_bytes)),
                     format_bytes(static_cast<int64_t>(last.hwm_bytes)), format_bytes(static_cast<int64_t>(last.pss_bytes)));
  std::string domains;
  auto totals = live_bytes_by_domain(state);
  for (size_t d = 0; d < totals.size(); ++d) {
    if (totals[d] != 0) domains += fmt::format("{}{} {}", domains.empty() ? "" : " · ", domain_name(static_cast<Domain>(d)), format_bytes(totals[d]));
  }
  out += fmt::format("live: {} (leakscope's own memory {})\n", domains.empty() ? "nothing" : domains,
                     format_bytes(static_cast<int64_t>(last.overhead_bytes)));
  if (state.process().sample_interval != 0) {
    out += fmt::format("sampled: one allocation per {} on average; heap bytes and blocks are estimates\n",
                       format_bytes(static_cast<int64_t>(state.process().sample_interval)));
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
  for (const ResidencyFinding& finding : analysis.findings) out += "\n" + wrap("Residency: " + finding.text, "");
  auto owner_line = [](const char* title, const std::vector<OwnerReport>& owners, const char* unnamed) {
    std::string line;
    size_t shown = 0;
    for (const OwnerReport& owner : owners) {
      if (owner.live_bytes <= 0 || shown++ == 6) continue;
      line += fmt::format("{}{} {}{}", line.empty() ? "" : " · ", owner.name.empty() ? unnamed : owner.name,
                          format_bytes(owner.live_bytes), owner.growing ? " (" + rate(owner.growth_bytes_per_min) + ")" : "");
    }
    return line.empty() ? std::string() : wrap(std::string(title) + line, "");
  };
  out += "\n" + owner_line("by task: ", analysis.by_task, "(no task)");
  out += owner_line("by thread: ", analysis.by_thread, "?");

  FrameFolder folder(options.fold);
  size_t total = 0;
  auto leaks = section(analysis, Verdict::kLeak, options, &total);
  out += fmt::format("\nLeak suspects: {}{}\n", total, total > leaks.size() ? fmt::format(" (top {} shown)", leaks.size()) : "");
  int rank = 0;
  for (const SiteReport* site : leaks) {
    const SiteJudgement& j = site->judgement;
    out += fmt::format("\n#{} leak, confidence {:.2f} · {} {} in {} blocks · {} · leak entropy {:.2f}\n", ++rank,
                       j.confidence, domain_name(site->summary.domain), format_bytes(site->summary.live_bytes),
                       site->summary.live_blocks, rate(j.growth_bytes_per_min), j.leak_entropy);
    out += wrap(fmt::format("first seen {:.1f} s · {}", site->first_seen_s, j.reason), "   ");
    out += wrap(owners_text(site->summary), "   ");
    const auto frames = folder.fold(symbolizer.stack(site->summary.stack));
    for (size_t i = 0; i < frames.size() && static_cast<int>(i) < options.frames; ++i) {
      out += fmt::format("   {} {}\n", i == 0 ? "at" : "by", frame_text(frames[i], kWidth - 6));
    }
  }

  struct Group {
    Verdict verdict;
    const char* title;
  };
  for (Group group : {Group{Verdict::kCache, "Caches and working sets (recent births, bounded)"},
                      Group{Verdict::kStartup, "Startup residents (born early, flat)"},
                      Group{Verdict::kUnknown, "Not judged"}}) {
    auto sites = section(analysis, group.verdict, options, &total);
    if (total == 0) continue;
    out += fmt::format("\n{}: {}{}\n", group.title, total, total > sites.size() ? fmt::format(" (top {} shown)", sites.size()) : "");
    for (const SiteReport* site : sites) {
      const auto frames = folder.fold(symbolizer.stack(site->summary.stack));
      out += fmt::format("  {:>10} {:<5} in {} blocks · leak entropy {:.2f} · {}\n", format_bytes(site->summary.live_bytes),
                         domain_name(site->summary.domain), site->summary.live_blocks, site->judgement.leak_entropy,
                         rate(site->judgement.growth_bytes_per_min));
      if (!frames.empty()) out += fmt::format("             at {}\n", frame_text(frames[0], kWidth - 16));
      out += wrap(site->judgement.reason, "             ");
    }
  }
  return out;
}

}  // namespace leakscope::report
