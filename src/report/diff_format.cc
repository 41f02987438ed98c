#include "report/diff_format.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include <fmt/format.h>

#include "report/frame_names.h"
#include "report/site_format.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;

namespace {

struct Side {
  int64_t bytes = 0, blocks = 0;
  size_t largest = SIZE_MAX;  // in the run's sites
};

// A site's signature (site_format.h) as name ids: its domain, then its frames innermost first.
using Signature = std::vector<uint32_t>;
using Sides = std::unordered_map<Signature, Side, StackHash>;

Sides by_signature(const RunAnalysis& run, FrameNames& names) {
  Sides sides;
  Signature signature;
  for (size_t i = 0; i < run.sites.size(); ++i) {
    const CapturedSite& site = run.capture_of(run.sites[i]);
    const Site& of_state = run.state.sites()[site.site];
    signature.assign(1, names.intern(domain_name(of_state.domain)));
    for (const SymbolizedFrame* frame : run.symbolizer->frames(of_state.stack)) signature.push_back(names.id(*frame));
    Side& side = sides[signature];
    side.bytes += site.live_bytes;
    side.blocks += site.live_blocks;
    if (side.largest == SIZE_MAX || site.live_bytes > run.capture_of(run.sites[side.largest]).live_bytes) side.largest = i;
  }
  return sides;
}

// in_text_order() is the entries of `sides`, ordered as their signatures' texts.
std::vector<const Sides::value_type*> in_text_order(const Sides& sides, const FrameNames& names) {
  std::vector<const Sides::value_type*> ordered;
  ordered.reserve(sides.size());
  for (const auto& entry : sides) ordered.push_back(&entry);
  std::sort(ordered.begin(), ordered.end(), [&](const auto* a, const auto* b) { return names.text_less(a->first, b->first, '|'); });
  return ordered;
}

std::string verdict_or_dash(const std::optional<Verdict>& verdict) {
  return verdict ? verdict_name(*verdict) : "-";
}

std::string run_line(const RunAnalysis& run) {
  std::string domains;
  for (size_t d = 0; d < run.live_bytes_by_domain.size(); ++d) {
    if (run.live_bytes_by_domain[d] != 0) {
      domains += fmt::format(" · {} {}", domain_name(static_cast<Domain>(d)), format_bytes(run.live_bytes_by_domain[d]));
    }
  }
  return fmt::format("{} (pid {}), snapshot {} of {} at {}{}", run.state.process().exe, run.state.process().pid,
                     run.at.index, run.at.count, format_seconds(run.judged.time_ns), domains);
}

// startup_cut() says how a run kept the stacks of its start-up (docs/RUNTIME.md, startup_depth).
std::string startup_cut(const RunAnalysis& run) {
  StartupStacks startup = run.state.startup_stacks();
  if (startup.stacks == 0) return "whole";
  return fmt::format("cut to {} frame{}", startup.kept_frames, startup.kept_frames == 1 ? "" : "s");
}

RunHeader header_of(const RunAnalysis& run) { return {run.state, run.at, run.judged, run.live_bytes_by_domain, run.devices}; }

}  // namespace

std::vector<DiffRow> diff_rows(const RunAnalysis& before, const RunAnalysis& after) {
  FrameNames names(signature_frame_name);
  Sides old_sites = by_signature(before, names), new_sites = by_signature(after, names);
  std::vector<DiffRow> rows;
  auto add = [&](const Side* old_side, const Side* new_side) {
    DiffRow row;
    if (old_side != nullptr) {
      row.before_bytes = old_side->bytes;
      row.before_blocks = old_side->blocks;
      row.before_verdict = before.sites[old_side->largest].verdict;
    }
    if (new_side != nullptr) {
      row.after_bytes = new_side->bytes;
      row.after_blocks = new_side->blocks;
      row.after_verdict = after.sites[new_side->largest].verdict;
    }
    row.shown = new_side != nullptr ? new_side->largest : old_side->largest;
    row.from_after = new_side != nullptr;
    const RunAnalysis& shown_in = row.from_after ? after : before;
    row.domain = shown_in.domain_of(shown_in.sites[row.shown]);
    if (old_side == nullptr) row.status = "appeared";
    else if (new_side == nullptr) row.status = "vanished";
    else if (row.after_bytes > row.before_bytes) row.status = "grew";
    else if (row.after_bytes < row.before_bytes) row.status = "shrank";
    else row.status = "unchanged";
    rows.push_back(row);
  };
  for (const auto* old_site : in_text_order(old_sites, names)) {
    auto match = new_sites.find(old_site->first);
    add(&old_site->second, match == new_sites.end() ? nullptr : &match->second);
  }
  for (const auto* new_site : in_text_order(new_sites, names)) {
    if (old_sites.count(new_site->first) == 0) add(nullptr, &new_site->second);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
    return std::llabs(a.after_bytes - a.before_bytes) > std::llabs(b.after_bytes - b.before_bytes);
  });
  return rows;
}

nlohmann::json diff_json(const RunAnalysis& before, const RunAnalysis& after, size_t top) {
  nlohmann::json document;
  document["version"] = 1;
  document["before"] = run_header_json(header_of(before));
  document["after"] = run_header_json(header_of(after));
  nlohmann::json sites = nlohmann::json::array();
  for (const DiffRow& row : diff_rows(before, after)) {
    if (sites.size() >= top) break;
    const RunAnalysis& shown_in = row.from_after ? after : before;
    nlohmann::json entry = site_json(site_summary(shown_in, row.shown), *shown_in.symbolizer);
    entry.erase("live_bytes");
    entry.erase("live_blocks");
    entry.erase("live_bytes_by_birth");  // of one run only; the diff compares totals
    entry["status"] = row.status;
    entry["before_bytes"] = row.before_bytes;
    entry["after_bytes"] = row.after_bytes;
    entry["delta_bytes"] = row.after_bytes - row.before_bytes;
    entry["before_blocks"] = row.before_blocks;
    entry["after_blocks"] = row.after_blocks;
    entry["before_verdict"] = row.before_verdict ? nlohmann::json(verdict_name(*row.before_verdict)) : nlohmann::json();
    entry["after_verdict"] = row.after_verdict ? nlohmann::json(verdict_name(*row.after_verdict)) : nlohmann::json();
    entry["verdict_changed"] = row.before_verdict && row.after_verdict && *row.before_verdict != *row.after_verdict;
    sites.push_back(std::move(entry));
  }
  document["sites"] = sites;
  return document;
}

std::string diff_text(const RunAnalysis& before, const RunAnalysis& after, size_t top) {
  std::string out;
  out += fmt::format("before: {}\n", run_line(before));
  out += fmt::format("after:  {}\n", run_line(after));
  if (std::string cut_before = startup_cut(before), cut_after = startup_cut(after); cut_before != cut_after) {
    out += fmt::format("note: start-up stacks are {} before and {} after (startup_depth): sites made during start-up do "
                       "not match between the runs\n",
                       cut_before, cut_after);
  }
  std::vector<DiffRow> rows = diff_rows(before, after);
  size_t changed = 0, verdict_changes = 0;
  for (const DiffRow& row : rows) {
    changed += row.status != "unchanged";
    verdict_changes += row.before_verdict && row.after_verdict && *row.before_verdict != *row.after_verdict;
  }
  out += fmt::format("\n{} site{} changed, {} changed verdict\n\n", changed, changed == 1 ? "" : "s", verdict_changes);
  size_t shown = 0;
  for (const DiffRow& row : rows) {
    bool verdict_changed = row.before_verdict && row.after_verdict && *row.before_verdict != *row.after_verdict;
    if ((row.status == "unchanged" && !verdict_changed) || shown++ >= top) continue;
    const RunAnalysis& shown_in = row.from_after ? after : before;
    const auto frames = shown_in.symbolizer->frames(shown_in.stack_of(shown_in.sites[row.shown]));
    std::string verdicts = fmt::format("{} → {}", verdict_or_dash(row.before_verdict), verdict_or_dash(row.after_verdict));
    std::string delta = format_bytes(row.after_bytes - row.before_bytes);
    if (row.after_bytes > row.before_bytes) delta = "+" + delta;
    out += fmt::format("{:>12}  {:<9} {:<4} {:<19} {} → {}\n", delta, row.status, domain_name(row.domain), verdicts,
                       format_bytes(row.before_bytes), format_bytes(row.after_bytes));
    if (!frames.empty()) out += fmt::format("              at {}\n", frame_text(*frames[0], 84));
    // The code that allocated, when the innermost frame is the allocator's or the interpreter's.
    const GroupReport& group = shown_in.groups[shown_in.sites[row.shown].group];
    if (group.has_user_frame && (frames.empty() || group.user_frame != frames[0])) {
      out += fmt::format("              in {}\n", frame_text(*group.user_frame, 84));
    }
  }
  return out;
}

}  // namespace leakscope::report
