#include "report/leak_gate.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "report/device_layers.h"
#include "report/frame_names.h"
#include "report/frame_roles.h"
#include "report/group_sums.h"
#include "report/site_format.h"
#include "report/text_file.h"
#include "report/units.h"

namespace leakscope::report {
namespace {

// The places (first user frames) a max-lost line names, the largest first.
constexpr size_t kLostPlacesNamed = 3;

std::string group_name(const SymbolizedFrame& frame) { return frame_name(frame, 60); }

// left_out_by() says why the gate leaves a site out: it is the runtime's own residue, or a rule
// matches it; "" when it counts.
std::string left_out_by(RunAnalysis& analysis, const SiteReport& site, const GateOptions& options, bool lost = false) {
  const char* residue = lost ? site.lost_runtime : site.runtime;
  if (options.runtime_residue && residue != nullptr) return std::string("runtime: ") + residue;
  if (options.suppressions != nullptr && !options.suppressions->empty()) {
    if (const SuppressionRule* rule = options.suppressions->match(analysis.symbolizer->stack(analysis.stack_of(site)))) {
      return fmt::format("suppressed by {} ({}:{})", rule->text, rule->origin, rule->line);
    }
  }
  return "";
}

// gated_group() splits `group`'s sites into those the gate counts and those it leaves out: the
// runtime's own residue and the sites a rule matches; the growth is taken in the share counted.
GatedGroup gated_group(RunAnalysis& analysis, size_t index, const GateOptions& options) {
  const GroupReport& group = analysis.groups[index];
  GatedGroup gated;
  gated.group = index;
  gated.name = group_name(*group.user_frame);
  gated.key = group_match_key(*group.user_frame);
  gated.freed_at_exit_bytes = group.freed_at_exit_bytes;
  gated.freed_when = freed_when(analysis);
  gated.relative_error = sampled_precision(analysis, group).relative_error;
  gated.older_than_freed_bytes = shown_older_than_freed_bytes(analysis, group);
  if (group.summed != nullptr) {
    gated.live_bytes = group.summed->gated_bytes;
    gated.left_out_bytes = group.summed->left_out_bytes;
    gated.left_out_by = group.summed->left_out_by;
  }
  for (uint32_t part : group.summed != nullptr ? std::span<const uint32_t>() : group.parts) {
    const SiteReport& site = analysis.sites[part];
    std::string why = left_out_by(analysis, site, options);
    int64_t bytes = analysis.capture_of(site).live_bytes;
    if (why.empty()) {
      gated.live_bytes += bytes;
      continue;
    }
    gated.left_out_bytes += bytes;
    if (gated.left_out_by.empty()) gated.left_out_by = why;
  }
  int64_t total = gated.live_bytes + gated.left_out_bytes;
  gated.growth_bytes_per_min = total <= 0 ? 0
                                          : group.growth_bytes_per_min * static_cast<double>(gated.live_bytes) /
                                                static_cast<double>(total);
  return gated;
}

// lost_group() splits what `group`'s sites lost as gated_group() splits their live bytes.
LostGroup lost_group(RunAnalysis& analysis, size_t index, const GateOptions& options) {
  const GroupReport& group = analysis.groups[index];
  LostGroup gated;
  gated.group = index;
  gated.name = group_name(*group.user_frame);
  gated.key = group_match_key(*group.user_frame);
  for (uint32_t part : group.parts) {
    const SiteReport& site = analysis.sites[part];
    if (!site.lost.any()) continue;
    std::string why = left_out_by(analysis, site, options, true);
    if (why.empty()) {
      gated.lost += site.lost;
      continue;
    }
    gated.left_out_bytes += site.lost.total_bytes();
    if (gated.left_out_by.empty()) gated.left_out_by = why;
  }
  return gated;
}

std::string groups_text(size_t count) { return fmt::format("{} group{}", count, count == 1 ? "" : "s"); }

std::string rate_text(double bytes_per_min) {
  return fmt::format("{}{}/min", bytes_per_min >= 0 ? "+" : "", format_bytes(static_cast<int64_t>(bytes_per_min)));
}

// compared() writes a figure and its limit so that they read differently when they differ: in
// bytes when the rounded forms would be the same.
std::pair<std::string, std::string> compared(int64_t figure, int64_t limit) {
  std::string a = format_bytes(figure), b = format_bytes(limit);
  if (a == b && figure != limit) return {fmt::format("{} B", figure), fmt::format("{} B", limit)};
  return {a, b};
}

// compared_rates() is compared() for rates: in bytes a minute, with as many decimals as tell
// them apart, when the rounded forms would be the same.
std::pair<std::string, std::string> compared_rates(double figure, double limit) {
  std::string a = rate_text(figure), b = rate_text(limit);
  for (int decimals = 0; a == b && figure != limit && decimals <= 6; ++decimals) {
    a = fmt::format("{}{:.{}f} B/min", figure >= 0 ? "+" : "", figure, decimals);
    b = fmt::format("{}{:.{}f} B/min", limit >= 0 ? "+" : "", limit, decimals);
  }
  return {a, b};
}

// lost_check() holds the lost bytes counted against `limit`, naming the groups that lost most.
GateCheck lost_check(const GateResult& result, int64_t limit) {
  if (!result.leak_checked) return {"max-lost", false, "the run was not leak-checked (leak_check=1): no lost bytes to hold"};
  uint64_t total = result.lost_bytes.total_bytes();
  bool within = total <= static_cast<uint64_t>(limit);
  std::vector<LostGroup> places = lost_places(result.lost);
  std::stable_sort(places.begin(), places.end(),
                   [](const LostGroup& a, const LostGroup& b) { return a.lost.total_bytes() > b.lost.total_bytes(); });
  std::string largest;
  for (size_t i = 0; i < places.size() && i < kLostPlacesNamed; ++i) {
    largest += fmt::format("{}{} {}", i == 0 ? " (largest: " : "; ", places[i].name,
                           lost_blocks_text(places[i].lost.total_bytes(), places[i].lost.total_blocks()));
  }
  if (places.size() > kLostPlacesNamed) largest += fmt::format("; and {} more", places.size() - kLostPlacesNamed);
  if (!largest.empty()) largest += ")";
  std::string split;
  if (result.lost_bytes.indirect_bytes != 0) {
    split = fmt::format(" ({} directly, {} indirectly)", format_exact_bytes(result.lost_bytes.bytes),
                        format_exact_bytes(result.lost_bytes.indirect_bytes));
  }
  return {"max-lost", within,
          fmt::format("{} lost in {} place{}{} {} {}{}", format_exact_bytes(total), places.size(), places.size() == 1 ? "" : "s", split,
                      within ? "<=" : ">", format_exact_bytes(static_cast<uint64_t>(limit)), largest)};
}

std::string percent_text(double percent) { return fmt::format("{:g}%", percent); }

// Bytes by match key, with the name of the first group of each, as the gate compares them with a
// baseline's.
using KeyedBytes = std::map<std::string, std::pair<int64_t, std::string>>;

void add_keyed(KeyedBytes* keyed, const std::string& key, int64_t bytes, const std::string& name) {
  auto& [sum, first_name] = (*keyed)[key];
  sum += bytes;
  if (first_name.empty()) first_name = name;
}

// How max-growth words what a key holds now against the baseline: leaked or lost bytes.
struct GrowthWords {
  const char* held;     // after the name: "" for leaked bytes, " lost" for lost ones
  const char* fresh;    // the offender a key the baseline lacks is
  const char* missing;  // why it is one
  std::string (*bytes)(int64_t);
};
constexpr GrowthWords kLeakGrowth{"", "new leak", "no leak there in the baseline", [](int64_t b) { return format_bytes(b); }};
constexpr GrowthWords kLostGrowth{" lost", "newly lost", "nothing lost there in the baseline",
                                  [](int64_t b) { return format_exact_bytes(static_cast<uint64_t>(b)); }};

// add_growth_offenders() adds to *offenders each key of `now` that the baseline `before` lacks, or
// that holds more than `limit` percent over it.
void add_growth_offenders(const KeyedBytes& now, const std::map<std::string, int64_t>& before, double limit,
                          const GrowthWords& words, std::vector<std::string>* offenders) {
  for (const auto& [key, entry] : now) {
    const auto& [bytes, name] = entry;
    auto found = before.find(key);
    int64_t before_bytes = found == before.end() ? 0 : found->second;
    if (before_bytes <= 0) {
      offenders->push_back(fmt::format("{}: {} {} ({})", words.fresh, name, words.bytes(bytes), words.missing));
      continue;
    }
    double growth = 100.0 * static_cast<double>(bytes - before_bytes) / static_cast<double>(before_bytes);
    if (growth > limit) {
      offenders->push_back(fmt::format("{}{} {} is {:+.0f}% over the baseline's {}", name, words.held, words.bytes(bytes),
                                       growth, words.bytes(before_bytes)));
    }
  }
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

Baseline parse_baseline(const std::string& path) {
  std::string text, why;
  if (!read_text_file(path, &text, &why)) throw BaselineError(fmt::format("{}: cannot read the baseline: {}", path, why));
  nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  auto not_report = [&](const char* why) {
    return BaselineError(fmt::format("{}: {}: not a report document (make one with leakscope report --format json --top 1000)",
                                     path, why));
  };
  if (document.is_discarded() || !document.is_object()) throw not_report("not JSON");
  if (!document.contains("version") || document["version"] != 1) throw not_report("not format version 1");
  if (!document.contains("groups") || !document["groups"].is_array()) throw not_report("no groups");
  Baseline baseline;
  baseline.path = path;
  if (document.contains("process") && document["process"].is_object() && document["process"].contains("exe") &&
      document["process"]["exe"].is_string()) {
    baseline.program = module_base_name(document["process"]["exe"].get<std::string>());
  }
  size_t leaks = 0;
  for (const nlohmann::json& group : document["groups"]) {
    if (!group.is_object() || !group.contains("live_bytes") || !group["live_bytes"].is_number_integer() ||
        group["live_bytes"].get<int64_t>() < 0 || !group.contains("verdict") || !group["verdict"].is_string()) {
      throw not_report("a group without live_bytes or verdict");
    }
    const nlohmann::json& frame = group.contains("first_user_frame") && group["first_user_frame"].is_object()
                                      ? group["first_user_frame"]
                                      : group.value("frame", nlohmann::json());
    std::string key = group_match_key(frame_from_json(frame));
    int64_t lost = 0;
    for (const char* field : {"lost_bytes", "indirectly_lost_bytes"}) {
      if (group.contains(field) && group[field].is_number_integer()) lost += group[field].get<int64_t>();
    }
    if (lost > 0) baseline.lost_bytes[key] += lost;
    if (group["verdict"] != "leak") continue;
    ++leaks;
    baseline.leaked_bytes[key] += group["live_bytes"].get<int64_t>();
  }
  baseline.lost_known = document.contains("leak_check") && document["leak_check"].is_object() &&
                        document["leak_check"].value("scanned", false);
  // A report lists at most --top groups per verdict: a leak left out would come back as "new".
  const nlohmann::json* total = document.contains("totals") ? &document["totals"] : nullptr;
  if (total != nullptr && total->contains("groups") && (*total)["groups"].contains("leak") &&
      (*total)["groups"]["leak"].is_number_integer() && (*total)["groups"]["leak"].get<size_t>() > leaks) {
    throw BaselineError(fmt::format("{}: lists {} of its {} leak groups (--top): make it with leakscope report --format "
                                    "json --top 1000",
                                    path, leaks, (*total)["groups"]["leak"].get<size_t>()));
  }
  return baseline;
}

}  // namespace

SiteLeftOut site_left_out(const Suppressions* suppressions, bool runtime_residue) {
  return [suppressions, runtime_residue](RunAnalysis& analysis, const SiteReport& site) {
    GateOptions options;
    options.suppressions = suppressions;
    options.runtime_residue = runtime_residue;
    return left_out_by(analysis, site, options);
  };
}

std::string group_match_key(const SymbolizedFrame& frame) {
  if (!frame.function.empty()) return frame.function + "|" + module_base_name(frame.file);
  return signature_frame_name(frame);
}

Baseline load_baseline(const std::string& path) {
  try {
    return parse_baseline(path);
  } catch (const BaselineError&) {
    throw;
  } catch (const std::exception& error) {
    throw BaselineError(fmt::format("{}: cannot read the baseline: {}", path, error.what()));
  }
}

std::vector<LostGroup> lost_places(const std::vector<LostGroup>& groups) {
  std::vector<LostGroup> places;
  for (const LostGroup& group : groups) {
    auto place = std::find_if(places.begin(), places.end(), [&](const LostGroup& each) { return each.name == group.name; });
    if (place == places.end()) {
      places.push_back(group);
      continue;
    }
    place->lost += group.lost;
    place->left_out_bytes += group.left_out_bytes;
    if (place->left_out_by.empty()) place->left_out_by = group.left_out_by;
  }
  return places;
}

bool GateResult::passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const GateCheck& check) { return check.passed; });
}

GateResult evaluate_gate(RunAnalysis& analysis, const GateOptions& options) {
  GateResult result;
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    const GroupReport& group = analysis.groups[g];
    // The runtime's own residue is never gated, and a caching allocator's reserve is never a leak
    // (device_layers.h), judged or not: neither is left out for want of a judgement.
    if (group.verdict == Verdict::kUnknown && group.runtime == nullptr) {
      result.unjudged.push_back({g, group.live_bytes});
      result.unjudged_bytes += group.live_bytes;
    }
    if (group.verdict != Verdict::kLeak) continue;
    GatedGroup gated = gated_group(analysis, g, options);
    if (gated.live_bytes > 0) {
      result.leaked_bytes += gated.live_bytes;
      result.leak_bytes_per_min += gated.growth_bytes_per_min;
      result.counted.push_back(std::move(gated));
    } else if (gated.left_out_by.rfind("runtime", 0) == 0) {
      result.runtime.push_back(std::move(gated));
    } else {
      result.suppressed.push_back(std::move(gated));
    }
  }
  std::stable_sort(result.unjudged.begin(), result.unjudged.end(),
                   [](const UnjudgedGroup& a, const UnjudgedGroup& b) { return a.live_bytes > b.live_bytes; });
  result.unjudged_groups = result.unjudged.size();
  if (analysis.read_in_parts) {
    result.unjudged_groups = analysis.read_in_parts->unjudged_groups;
    result.unjudged_bytes = analysis.read_in_parts->unjudged_bytes;
  }
  result.peak_rss_bytes = analysis.peak_program_rss_bytes;
  result.leak_checked = analysis.state.leak_check().has_value();
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    if (!analysis.groups[g].lost.any()) continue;
    LostGroup lost = lost_group(analysis, g, options);
    if (lost.lost.any()) {
      result.lost_bytes += lost.lost;
      result.lost.push_back(std::move(lost));
    } else {
      result.lost_left_out.push_back(std::move(lost));
    }
  }
  std::stable_sort(result.lost.begin(), result.lost.end(),
                   [](const LostGroup& a, const LostGroup& b) { return a.lost.total_bytes() > b.lost.total_bytes(); });

  const GateLimits& limits = options.limits;
  bool any_limit = limits.any();
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
    auto [figure, bound] = compared(result.leaked_bytes, limit);
    bool within = result.leaked_bytes <= limit;
    result.checks.push_back({"max-leaked", within,
                             fmt::format("{} leaked in {} {} {}{}", figure, groups_text(result.counted.size()),
                                         within ? "<=" : ">", bound, largest)});
  }
  if (limits.max_leak_bytes_per_min) {
    double limit = *limits.max_leak_bytes_per_min;
    bool within = result.leak_bytes_per_min <= limit;
    auto [figure, bound] = compared_rates(result.leak_bytes_per_min, limit);
    result.checks.push_back({"max-leak-rate", within, fmt::format("leaks grow {} {} {}{}", figure, within ? "<=" : ">", bound, fastest)});
  }
  if (limits.max_rss_bytes) {
    int64_t limit = *limits.max_rss_bytes;
    auto [figure, bound] = compared(static_cast<int64_t>(result.peak_rss_bytes), limit);
    bool within = static_cast<int64_t>(result.peak_rss_bytes) <= limit;
    result.checks.push_back({"max-rss", within,
                             fmt::format("peak RSS {} {} {} (less leakscope's own memory)", figure, within ? "<=" : ">", bound)});
  }
  if ((limits.max_lost_bytes || (!any_limit && result.leak_checked)) && !options.lost_not_applicable) {
    result.checks.push_back(lost_check(result, limits.max_lost_bytes.value_or(0)));
  }
  if (limits.max_growth_percent && options.baseline != nullptr) {
    double limit = *limits.max_growth_percent;
    // Both sides by match key: the sites of one function may be several groups.
    KeyedBytes now;
    for (const GatedGroup& gated : result.counted) add_keyed(&now, gated.key, gated.live_bytes, gated.name);
    std::vector<std::string> offenders;
    // What was lost, by key too, when both runs were leak-checked: a short test binary's new leak is
    // lost at exit before it could grow.
    if (options.baseline->lost_known && result.leak_checked) {
      KeyedBytes lost_now;
      for (const LostGroup& lost : result.lost) {
        add_keyed(&lost_now, lost.key, static_cast<int64_t>(lost.lost.total_bytes()), lost.name);
      }
      add_growth_offenders(lost_now, options.baseline->lost_bytes, limit, kLostGrowth, &offenders);
    }
    add_growth_offenders(now, options.baseline->leaked_bytes, limit, kLeakGrowth, &offenders);
    result.checks.push_back(
        {"max-growth", offenders.empty(),
         offenders.empty()
             ? fmt::format("no leak grew more than {} over the baseline {}", percent_text(limit), options.baseline->path)
             : fmt::format("{} > {} over the baseline {}", fmt::join(offenders, "; "), percent_text(limit),
                           options.baseline->path)});
  }
  return result;
}

}  // namespace leakscope::report
