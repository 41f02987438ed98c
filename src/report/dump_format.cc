#include "report/dump_format.h"

#include <fmt/format.h>

#include "report/json_text.h"
#include "report/json_writer.h"
#include "report/leak_check.h"
#include "report/site_format.h"
#include "report/text_layout.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;

void write_dump_json(const RunHeader& run, size_t left_out, const NextDumpSite& next, std::FILE* out) {
  // The header's members, then "sites" last, one site at a time.
  nlohmann::json document = run_header_json(run);
  document["sites_left_out"] = left_out;
  document["leak_check"] = leak_check_json(run.state);
  std::string header = json_text(document);
  header.erase(header.find_last_of('}'));
  while (!header.empty() && (header.back() == '\n' || header.back() == ' ')) header.pop_back();
  fmt::print(out, "{},\n  \"sites\": [", header);
  bool first = true;
  for (DumpSite site; next(&site);) {
    nlohmann::json entry = site_json(site.summary, site.frames);
    add_lost_json(site.lost, &entry);
    fmt::print(out, "{}\n    {}", first ? "" : ",", indented(json_text(entry), 4));
    first = false;
  }
  fmt::print(out, "{}]\n}}\n", first ? "" : "\n  ");
}

void write_dump_text(const RunHeader& run, size_t shown, size_t left_out, const NextDumpSite& next, std::FILE* out,
                     int max_frames) {
  std::string text = run_header_text(run, "leakscope dump");
  if (run.state.leak_check()) {
    text += leak_check_text(*run.state.leak_check());
    text += unscanned_mappings_note(*run.state.leak_check(), run.live_bytes_by_domain[static_cast<size_t>(Domain::kMmap)]);
  }
  if (left_out != 0) {
    text += fmt::format("sites: the {} largest shown, {} more left out (--top, --min-bytes)\n", shown, left_out);
  }
  int rank = 0;
  for (DumpSite dumped; next(&dumped);) {
    const SiteSummary& site = dumped.summary;
    std::fwrite(text.data(), 1, text.size(), out);
    text.clear();
    std::string lost_part = lost_text(dumped.lost);
    text += "\n" + wrap(fmt::format("#{} {} {} in {} block{} · {} allocations, {} temporary{}", ++rank, domain_name(site.domain),
                                    format_bytes(site.live_bytes), site.live_blocks, site.live_blocks == 1 ? "" : "s",
                                    site.allocations, site.temporary_allocations, lost_part.empty() ? "" : " · " + lost_part),
                        "    ", "");
    const std::vector<SymbolizedFrame>& frames = dumped.frames;
    for (size_t i = 0; i < frames.size() && static_cast<int>(i) < max_frames; ++i) {
      text += fmt::format("    {} {}\n", i == 0 ? "at" : "by", frame_text(frames[i], 92));
    }
    if (frames.size() > static_cast<size_t>(max_frames)) text += fmt::format("    ... {} more frames\n", frames.size() - max_frames);
    text += fmt::format("    {}\n", owners_text(site));
  }
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace leakscope::report
