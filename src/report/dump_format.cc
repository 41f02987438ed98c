#include "report/dump_format.h"

#include <fmt/format.h>

#include "report/site_format.h"
#include "report/site_summary.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;

namespace {

// indented() is `text` with every line after the first indented by `spaces`.
std::string indented(const std::string& text, size_t spaces) {
  std::string result;
  result.reserve(text.size());
  for (char c : text) {
    result += c;
    if (c == '\n') result.append(spaces, ' ');
  }
  return result;
}

}  // namespace

void write_dump_json(const RunState& state, Symbolizer& symbolizer, std::FILE* out) {
  // The header's members, then "sites" last, one site at a time.
  std::string header = run_header_json(state).dump(2);
  header.erase(header.find_last_of('}'));
  while (!header.empty() && (header.back() == '\n' || header.back() == ' ')) header.pop_back();
  fmt::print(out, "{},\n  \"sites\": [", header);
  bool first = true;
  for (const SiteSummary& site : summarize_live_sites(state)) {
    fmt::print(out, "{}\n    {}", first ? "" : ",", indented(site_json(site, symbolizer).dump(2), 4));
    first = false;
  }
  fmt::print(out, "{}]\n}}\n", first ? "" : "\n  ");
}

void write_dump_text(const RunState& state, Symbolizer& symbolizer, std::FILE* out, int max_frames) {
  const SnapshotInfo& last = state.last_snapshot();
  std::string text;  // written out site by site
  text += fmt::format("{} (pid {}): {} snapshots over {}, ended by {}\n", state.process().exe, state.process().pid,
                     state.snapshot_count(), format_seconds(last.time_ns), ended_by(last));
  text += fmt::format("RSS {} (peak {}), PSS {}, leakscope overhead {}\n", format_bytes(static_cast<int64_t>(last.rss_bytes)),
                     format_bytes(static_cast<int64_t>(last.hwm_bytes)), format_bytes(static_cast<int64_t>(last.pss_bytes)),
                     format_bytes(static_cast<int64_t>(last.overhead_bytes)));
  auto totals = live_bytes_by_domain(state);
  std::string domains;
  for (size_t d = 0; d < totals.size(); ++d) {
    if (totals[d] == 0) continue;
    domains += fmt::format("{}{} {}", domains.empty() ? "" : ", ", domain_name(static_cast<Domain>(d)), format_bytes(totals[d]));
  }
  text += fmt::format("live: {}\n", domains.empty() ? "nothing" : domains);
  if (state.process().sample_interval != 0) {
    text += fmt::format("sampled: one allocation per {} on average; heap bytes and blocks are estimates\n",
                       format_bytes(static_cast<int64_t>(state.process().sample_interval)));
  }
  int rank = 0;
  for (const SiteSummary& site : summarize_live_sites(state)) {
    std::fwrite(text.data(), 1, text.size(), out);
    text.clear();
    text += fmt::format("\n#{} {} {} in {} block{}\n", ++rank, domain_name(site.domain), format_bytes(site.live_bytes),
                       site.live_blocks, site.live_blocks == 1 ? "" : "s");
    const auto& frames = symbolizer.stack(site.stack);
    for (size_t i = 0; i < frames.size() && static_cast<int>(i) < max_frames; ++i) {
      text += fmt::format("    {} {}\n", i == 0 ? "at" : "by", frame_text(frames[i], 92));
    }
    if (frames.size() > static_cast<size_t>(max_frames)) text += fmt::format("    ... {} more frames\n", frames.size() - max_frames);
    text += fmt::format("    {}\n", owners_text(site));
  }
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace leakscope::report
