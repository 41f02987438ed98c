#include "report/report_passes.h"

#include <malloc.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/intern_table.h"
#include "report/group_keys.h"
#include "report/group_sums.h"

namespace leakscope::report {
namespace {

// KeptStacks is a keep predicate for RunState::keep_sites_of() that notes the stream's id of each
// stack it keeps: kept stacks are numbered from 1 in the order they are kept.
class KeptStacks {
 public:
  explicit KeptStacks(std::function<bool(uint32_t)> keep) : keep_(std::move(keep)) {}

  std::function<bool(uint32_t)> predicate() {
    return [this](uint32_t stack) {
      bool kept = keep_(stack);
      if (kept && stack != 0) stream_ids_.push_back(stack);
      return kept;
    };
  }
  // stream_id() is the stream's id of kept stack `stack`.
  uint32_t stream_id(uint32_t stack) const { return stack == 0 ? 0 : stream_ids_[stack - 1]; }

 private:
  std::function<bool(uint32_t)> keep_;
  std::vector<uint32_t> stream_ids_;
};

// How a part's group or site ranks among the whole stream's, as analyze_sites() orders them.
struct Rank {
  Verdict verdict = Verdict::kUnknown;
  double growth_bytes_per_min = 0;
  int64_t bytes = 0;
};

// A group a report may show, as the read of its part found it.
struct Candidate {
  Rank group;
  // Groups that rank alike keep the order of their first sites (ranked so, then in the stream's
  // order of sites).
  Rank first_site;
  uint32_t first_site_id = 0;  // the stream's
  uint64_t family = 0;
  uint64_t identity = 0;  // GroupReport::identity
};

// rank_order() is negative when `a` ranks before `b`, positive when after, 0 when they rank alike.
int rank_order(const Rank& a, const Rank& b) {
  if (ranks_before(a, a.bytes, b, b.bytes)) return -1;
  return ranks_before(b, b.bytes, a, a.bytes) ? 1 : 0;
}

bool listed_before(const Candidate& a, const Candidate& b) {
  if (int order = rank_order(a.group, b.group); order != 0) return order < 0;
  if (int order = rank_order(a.first_site, b.first_site); order != 0) return order < 0;
  return a.first_site_id < b.first_site_id;
}

// A peak's holder, as the read of its part found it.
struct HolderCandidate {
  int64_t bytes = 0;
  uint32_t first_site_id = 0;  // the stream's
  uint64_t family = 0;
  uint32_t first_site_stack = 0;  // the stream's
  uint64_t identity = 0;          // as its group's
};

bool held_more(const HolderCandidate& a, const HolderCandidate& b) {
  return a.bytes != b.bytes ? a.bytes > b.bytes : a.first_site_id < b.first_site_id;
}

// A site the JSON may list, as the read of its part found it.
struct SiteCandidate {
  Rank site;
  uint32_t site_id = 0;  // the stream's
  uint64_t family = 0;
  uint32_t stack = 0;    // the stream's
};

// Sites that rank alike keep the order of the stream's ids (analysis.cc orders them by live bytes
// and id before ranking them).
bool site_listed_before(const SiteCandidate& a, const SiteCandidate& b) {
  if (int order = rank_order(a.site, b.site); order != 0) return order < 0;
  return a.site_id < b.site_id;
}

// keep_first() sorts `items` by `before` and keeps the first `count`.
template <typename T, typename Before>
void keep_first(std::vector<T>* items, size_t count, Before before) {
  std::sort(items->begin(), items->end(), before);
  if (items->size() > count) items->resize(count);
}

// How many lists of `top` the second round keeps: the sections', the groups and sites of each
// verdict, the unjudged groups, and the two peaks' holders.
constexpr uint64_t kListsKept = kReportSections + 2 * kVerdictCount + 1 + 2;

// What the second round keeps of its parts: for the text, the top of each section; for the JSON,
// the top groups and sites of each verdict and more of the peaks' holders; for the gate, every
// leak group and the largest of those left unjudged.
struct Kept {
  std::array<std::vector<Candidate>, kReportSections> sections;
  std::array<std::vector<Candidate>, kVerdictCount> groups_by_verdict;
  std::array<std::vector<SiteCandidate>, kVerdictCount> sites_by_verdict;
  std::vector<Candidate> unjudged;  // for the gate: not the runtime's own residue
  std::unordered_set<uint64_t> leak_families;
  std::vector<HolderCandidate> peak_holders, device_peak_holders;
  // The holders of summed families, by identity, summed as their reads come.
  std::unordered_map<uint64_t, HolderCandidate> summed_peak_holders, summed_device_peak_holders;
  SectionCounts counts{};
  VerdictCounts verdicts;
  size_t unjudged_groups = 0;
  int64_t unjudged_bytes = 0;
  OwnerSums owners;
  int64_t teardown_freed_bytes = 0;
  std::array<int64_t, internal::kDomainCount> live_bytes_by_domain{};  // of the sites judged

  // take() adds what a part's analysis holds; `stacks` and `families` name its stacks.
  void take(const RunAnalysis& analysis, const KeptStacks& stacks, const std::vector<uint64_t>& families,
            const AnalysisOptions& options) {
    std::vector<uint32_t> first_site(analysis.groups.size(), UINT32_MAX);  // in analysis.sites, whose order groups follow
    for (size_t i = 0; i < analysis.sites.size(); ++i) {
      if (first_site[analysis.sites[i].group] == UINT32_MAX) first_site[analysis.sites[i].group] = static_cast<uint32_t>(i);
    }
    for (size_t g = 0; g < analysis.groups.size(); ++g) {
      const GroupReport& group = analysis.groups[g];
      const SiteReport& site = analysis.sites[first_site[g]];
      const CapturedSite& taken = analysis.capture_of(site);
      Candidate candidate{{group.verdict, group.growth_bytes_per_min, group.live_bytes},
                          {site.verdict, site.growth_bytes_per_min, taken.live_bytes},
                          analysis.state.stream_site_id(taken.site),
                          family_of(analysis, stacks, families, taken.site),
                          group.identity};
      add_group(group, candidate, options);
    }
    keep_groups(options);
    take_sites(analysis, stacks, families, options);
    VerdictCounts part_verdicts = verdict_counts(analysis);
    for (size_t v = 0; v < kVerdictCount; ++v) {
      verdicts.groups[v] += part_verdicts.groups[v];
      verdicts.sites[v] += part_verdicts.sites[v];
    }
    // The text names five holders; the JSON up to --top.
    size_t holders_kept = std::max(options.top, kPeakHoldersShown);
    auto take_holders = [&](const PeakReport& peak, std::vector<HolderCandidate>* kept) {
      for (size_t i = 0; i < peak.holders.size() && i < holders_kept; ++i) kept->push_back(holder_of(analysis, stacks, families, peak.holders[i]));
      keep_first(kept, holders_kept, held_more);
    };
    take_holders(analysis.peak, &peak_holders);
    take_holders(analysis.device_peak, &device_peak_holders);
    take_program_wide(analysis, owner_sums(analysis));
  }

  // take_summing_read() adds what a read that adds to summed groups holds but its groups: those
  // are taken whole by take_sums().
  void take_summing_read(const RunAnalysis& analysis, const KeptStacks& stacks, const std::vector<uint64_t>& families,
                         const AnalysisOptions& options) {
    take_sites(analysis, stacks, families, options);
    for (const SiteReport& site : analysis.sites) ++verdicts.sites[verdict_rank(site.verdict)];
    auto merge = [&](const PeakReport& peak, std::unordered_map<uint64_t, HolderCandidate>* summed) {
      for (const PeakReport::Holder& holder : peak.holders) {
        HolderCandidate candidate = holder_of(analysis, stacks, families, holder);
        auto [found, added] = summed->emplace(candidate.identity, candidate);
        if (added) continue;
        found->second.bytes += candidate.bytes;
        if (candidate.first_site_id < found->second.first_site_id) {
          found->second.first_site_id = candidate.first_site_id;
          found->second.first_site_stack = candidate.first_site_stack;
        }
      }
    };
    merge(analysis.peak, &summed_peak_holders);
    merge(analysis.device_peak, &summed_device_peak_holders);
    take_program_wide(analysis, owner_sums(analysis, false));
  }

  // take_sums() adds the summed groups, judged.
  void take_sums(const SummedGroups& sums, const AnalysisOptions& options) {
    for (const auto& [identity, sum] : sums) {
      GroupReport group;
      group.verdict = sum.judgement.verdict;
      group.growth_bytes_per_min = sum.judgement.growth_bytes_per_min;
      group.live_bytes = sum.live_bytes;
      group.live_blocks = sum.live_blocks;
      group.runtime = sum.all_residue ? sum.largest_runtime : nullptr;
      const SummedPart& first = sum.first_ranked;
      Candidate candidate{{group.verdict, group.growth_bytes_per_min, group.live_bytes},
                          {first.verdict, first.growth_bytes_per_min, first.live_bytes},
                          first.site,
                          sum.family,
                          identity};
      add_group(group, candidate, options);
      ++verdicts.groups[verdict_rank(group.verdict)];
      if (group.verdict == Verdict::kLeak && group.runtime == nullptr) owners.share(group.growth_bytes_per_min, sum.owned);
    }
    keep_groups(options);
    size_t holders_kept = std::max(options.top, kPeakHoldersShown);
    for (auto [summed, kept] : {std::pair{&summed_peak_holders, &peak_holders}, std::pair{&summed_device_peak_holders, &device_peak_holders}}) {
      for (const auto& [identity, holder] : *summed) kept->push_back(holder);
      keep_first(kept, holders_kept, held_more);
    }
  }

  // sum_holders() gives the holders of summed families (`summed` of the family of a site of the
  // last read), which it holds a share of, what all of their sites held; one that was not kept is
  // left out (it held less than any kept).
  template <typename Summed>
  void sum_holders(PeakReport* peak, bool device, Summed&& summed) const {
    std::unordered_map<uint64_t, int64_t> held;
    for (const HolderCandidate& holder : device ? device_peak_holders : peak_holders) held.emplace(holder.identity, holder.bytes);
    std::erase_if(peak->holders, [&](PeakReport::Holder& holder) {
      if (!summed(holder.site)) return false;
      auto found = held.find(holder.identity);
      if (found == held.end()) return true;
      holder.bytes = found->second;
      return false;
    });
    // Holders that held alike keep the order of their first sites, as build_peak_holders() makes them.
    std::sort(peak->holders.begin(), peak->holders.end(), [](const PeakReport::Holder& a, const PeakReport::Holder& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site;
    });
  }

  // families() are the families of the groups, sites and holders kept (those of summed families
  // among them).
  std::unordered_set<uint64_t> families() const {
    std::unordered_set<uint64_t> chosen;
    for_each_chosen([&](const Candidate& candidate) { chosen.insert(candidate.family); },
                    [&](const SiteCandidate& candidate) { chosen.insert(candidate.family); },
                    [&](const HolderCandidate& holder) { chosen.insert(holder.family); });
    chosen.insert(leak_families.begin(), leak_families.end());
    return chosen;
  }

  // summed_stacks() are the stacks a last read keeps of the families `summed` names, whose groups
  // are in `sums`: the largest sites of the groups chosen, the sites chosen, the first sites of
  // the holders chosen and the largest of their groups.
  template <typename Summed>
  std::unordered_set<uint32_t> summed_stacks(const SummedGroups& sums, Summed&& summed) const {
    std::unordered_set<uint32_t> stacks;
    auto add_group = [&](uint64_t identity) {
      auto found = sums.find(identity);
      if (found == sums.end()) return;
      const std::vector<SummedPart>& parts = found->second.parts;
      for (size_t i = 0; i < parts.size() && i < kPartsShown; ++i) stacks.insert(parts[i].stack);
    };
    for_each_chosen([&](const Candidate& candidate) { add_group(candidate.identity); },
                    [&](const SiteCandidate& candidate) {
                      if (summed(candidate.family)) stacks.insert(candidate.stack);
                    },
                    [&](const HolderCandidate& holder) {
                      if (!summed(holder.family)) return;
                      stacks.insert(holder.first_site_stack);
                      add_group(holder.identity);  // the group it is of, if still live: the peak names its verdict
                    });
    // Every leak group of a summed family, for the gate, which lists them all.
    for (const auto& [identity, sum] : sums) {
      if (sum.judgement.verdict == Verdict::kLeak && leak_families.count(sum.family) != 0) add_group(identity);
    }
    return stacks;
  }

 private:
  static uint64_t family_of(const RunAnalysis& analysis, const KeptStacks& stacks, const std::vector<uint64_t>& families, uint32_t site) {
    uint32_t stream_stack = stacks.stream_id(analysis.state.sites()[site].stack);
    return stream_stack < families.size() ? families[stream_stack] : 0;
  }

  static HolderCandidate holder_of(const RunAnalysis& analysis, const KeptStacks& stacks, const std::vector<uint64_t>& families,
                                   const PeakReport::Holder& holder) {
    return {holder.bytes, analysis.state.stream_site_id(holder.site), family_of(analysis, stacks, families, holder.site),
            stacks.stream_id(analysis.state.sites()[holder.site].stack), holder.identity};
  }

  void add_group(const GroupReport& group, const Candidate& candidate, const AnalysisOptions& options) {
    size_t section = static_cast<size_t>(section_of(group));
    size_t counted = counts[section].groups;
    count_in_sections(group, options.min_bytes, &counts);
    if (counts[section].groups != counted) sections[section].push_back(candidate);
    if (group.live_bytes >= options.min_bytes) groups_by_verdict[verdict_rank(group.verdict)].push_back(candidate);
    if (group.verdict == Verdict::kUnknown && group.runtime == nullptr) {
      if (options.every_leak) unjudged.push_back(candidate);  // the gate names the largest
      ++unjudged_groups;
      unjudged_bytes += group.live_bytes;
    }
    if (options.every_leak && group.verdict == Verdict::kLeak) leak_families.insert(candidate.family);
  }

  void keep_groups(const AnalysisOptions& options) {
    for (auto& listed : sections) keep_first(&listed, options.top, listed_before);
    for (auto& listed : groups_by_verdict) keep_first(&listed, options.top, listed_before);
    keep_first(&unjudged, options.top, listed_before);
  }

  void take_sites(const RunAnalysis& analysis, const KeptStacks& stacks, const std::vector<uint64_t>& families,
                  const AnalysisOptions& options) {
    for (const SiteReport& site : analysis.sites) {
      const CapturedSite& taken = analysis.capture_of(site);
      if (taken.live_bytes < options.min_bytes) continue;
      sites_by_verdict[verdict_rank(site.verdict)].push_back({{site.verdict, site.growth_bytes_per_min, taken.live_bytes},
                                                              analysis.state.stream_site_id(taken.site),
                                                              family_of(analysis, stacks, families, taken.site),
                                                              stacks.stream_id(analysis.stack_of(site))});
    }
    for (auto& listed : sites_by_verdict) keep_first(&listed, options.top, site_listed_before);
  }

  void take_program_wide(const RunAnalysis& analysis, const OwnerSums& part_owners) {
    owners.add(part_owners);
    teardown_freed_bytes += analysis.teardown.freed_bytes;
    for (size_t domain = 0; domain < live_bytes_by_domain.size(); ++domain) {
      live_bytes_by_domain[domain] += analysis.live_bytes_by_domain[domain];
    }
  }

  // for_each_chosen() calls `group`, `site` and `holder` on every candidate kept.
  template <typename Group, typename Site, typename Holder>
  void for_each_chosen(Group&& group, Site&& site, Holder&& holder) const {
    for (const auto& listed : sections) std::for_each(listed.begin(), listed.end(), group);
    for (const auto& listed : groups_by_verdict) std::for_each(listed.begin(), listed.end(), group);
    std::for_each(unjudged.begin(), unjudged.end(), group);
    for (const auto& listed : sites_by_verdict) std::for_each(listed.begin(), listed.end(), site);
    std::for_each(peak_holders.begin(), peak_holders.end(), holder);
    std::for_each(device_peak_holders.begin(), device_peak_holders.end(), holder);
  }
};

// name_families() reads the stream in `parts`, each keeping the stacks a hash gives it, and names
// the family of groups of each stack that a site has, by the stack's id in the stream, counting
// each family's sites; `symbolizer` is rebound to each part.
std::vector<uint64_t> name_families(StreamReader& reader, const AnalysisOptions& options, uint64_t stream_stacks, uint32_t parts,
                                    Symbolizer& symbolizer, std::unordered_map<uint64_t, uint64_t>* sites_by_family) {
  std::vector<uint64_t> families(stream_stacks + 1, 0);
  for (uint32_t part = 0; part < parts; ++part) {
    reader.restart();
    RunState state;
    KeptStacks stacks([parts, part](uint32_t stack) { return internal::hash_mix(stack) % parts == part; });
    state.keep_sites_of(stacks.predicate());
    read_run(reader, 0, &state, [](const RunState&) {}, false);
    symbolizer.rebind(state);
    FrameRoles roles(options.fold, state.process().exe);
    GroupKeys keys(state, symbolizer, roles);
    for (uint32_t site = 1; site < state.sites().size(); ++site) {
      if (!state.sites()[site].known) continue;
      uint32_t stream_stack = stacks.stream_id(state.sites()[site].stack);
      if (stream_stack >= families.size()) continue;
      families[stream_stack] = keys.family_of(keys.of(site), stream_stack);
      ++(*sites_by_family)[families[stream_stack]];
    }
  }
  return families;
}

}  // namespace

std::unique_ptr<RunAnalysis> analyze_in_parts(StreamReader& reader, const ChosenSnapshot& at, const std::vector<SnapshotMark>& marks,
                                              const AnalysisOptions& options) {
  // The first read keeps every stack's sites until it has as many as the budget allows: a stream
  // that has no more is read once. One that has goes on being read, keeping no more, for the
  // number of its stacks.
  uint64_t per_part = std::max<uint64_t>(1, options.site_memory / kReportBytesPerSite);
  std::unique_ptr<RunAnalysis> first =
      analyze_sites(reader, at, marks, options, [asked = uint64_t{0}, per_part](uint32_t) mutable { return asked++ < per_part; }, true);
  uint64_t stream_stacks = first->state.stream_stack_count();
  if (stream_stacks + 1 <= per_part) return first;
  // A leak-checked stream is read at once (report_passes.h), and so is one whose stacks the lists
  // kept of its parts could hold as many of: with a large --top, parts would save nothing.
  bool at_once = first->state.leak_check().has_value() || stream_stacks <= options.top * kListsKept;
  // One symbolizer for every read: what it reads of the modules' debug information (most of what a
  // report of a large program holds) is read once.
  std::unique_ptr<Symbolizer> symbolizer = std::move(first->symbolizer);
  first.reset();
  malloc_trim(0);
  try {
    if (at_once) {
      reader.restart();
      std::unique_ptr<RunAnalysis> whole = analyze_sites(reader, at, marks, options, nullptr, false, std::move(symbolizer));
      reader.check_unchanged();
      return whole;
    }
    auto parts = static_cast<uint32_t>(std::min<uint64_t>((stream_stacks + per_part) / per_part, kMaxReportParts));
    std::unordered_map<uint64_t, uint64_t> sites_by_family;
    std::vector<uint64_t> families = name_families(reader, options, stream_stacks, parts, *symbolizer, &sites_by_family);
    malloc_trim(0);  // what each read let go of goes back before the next: reads do not fit in each other's holes
    auto family_of = [&families](uint32_t stack) { return stack < families.size() ? families[stack] : 0; };
    // A family of more sites than a part holds is read in shares of its stacks, its groups summed.
    std::unordered_set<uint64_t> summed_families;
    auto summed_by_family = [&](uint64_t family) { return summed_families.count(family) != 0; };
    auto summed_family = [&](uint32_t stack) { return !summed_families.empty() && summed_by_family(family_of(stack)); };
    auto sums = std::make_shared<SummedGroups>();
    // sum_families() reads the stacks of `summed` in shares, adding to `sums`, and calls `take`
    // with each read.
    auto sum_families = [&](const std::unordered_set<uint64_t>& summed, auto take) {
      uint64_t sites = 0;
      for (uint64_t family : summed) sites += sites_by_family[family];
      auto reads = static_cast<uint32_t>(std::clamp<uint64_t>((sites + per_part - 1) / per_part, 1, kMaxReportParts));
      std::unique_ptr<RunAnalysis> analysis;
      for (uint32_t read = 0; read < reads; ++read) {
        if (analysis) symbolizer = std::move(analysis->symbolizer);
        analysis.reset();
        malloc_trim(0);
        reader.restart();
        KeptStacks stacks([&, reads, read](uint32_t stack) {
          return summed.count(family_of(stack)) != 0 && internal::hash_mix(stack) % reads == read;
        });
        analysis = analyze_sites(reader, at, marks, options, stacks.predicate(), false, std::move(symbolizer), nullptr, true);
        add_to_sums(*analysis, [&stacks](uint32_t stack) { return stacks.stream_id(stack); }, family_of, options.gate_left_out,
                    sums.get());
        take(*analysis, stacks);
      }
      judge_sums(*analysis, sums.get());
      symbolizer = std::move(analysis->symbolizer);
      summed_families.insert(summed.begin(), summed.end());
    };
    Kept kept;
    std::unordered_set<uint64_t> too_large;
    for (const auto& [family, sites] : sites_by_family) {
      if (sites > per_part) too_large.insert(family);
    }
    if (!too_large.empty()) {
      sum_families(too_large, [&](const RunAnalysis& analysis, const KeptStacks& stacks) {
        kept.take_summing_read(analysis, stacks, families, options);
      });
      kept.take_sums(*sums, options);
    }
    for (uint32_t part = 0; part < parts; ++part) {
      reader.restart();
      KeptStacks stacks([&, parts, part](uint32_t stack) {
        return !summed_family(stack) && internal::hash_mix(family_of(stack)) % parts == part;
      });
      std::unique_ptr<RunAnalysis> analysis =
          analyze_sites(reader, at, marks, options, stacks.predicate(), false, std::move(symbolizer));
      kept.take(*analysis, stacks, families, options);
      symbolizer = std::move(analysis->symbolizer);
      analysis.reset();
      malloc_trim(0);
    }
    // The last read holds the families chosen whole, but for those of more sites together than a
    // part holds: the largest of them are summed first, as too large ones were (the parts judged
    // them already: the sums are what is shown of them), and only their largest sites held.
    std::unordered_set<uint64_t> chosen = kept.families();
    std::vector<std::pair<uint64_t, uint64_t>> chosen_sites;  // sites, family: largest first
    uint64_t held = 0;
    for (uint64_t family : chosen) {
      if (summed_by_family(family)) continue;
      chosen_sites.emplace_back(sites_by_family[family], family);
      held += chosen_sites.back().first;
    }
    std::sort(chosen_sites.rbegin(), chosen_sites.rend());
    std::unordered_set<uint64_t> summed_to_show;
    for (auto [sites, family] : chosen_sites) {
      if (held <= per_part) break;
      summed_to_show.insert(family);
      held -= sites;
    }
    if (!summed_to_show.empty()) sum_families(summed_to_show, [](const RunAnalysis&, const KeptStacks&) {});
    std::unordered_set<uint32_t> summed_stacks = kept.summed_stacks(*sums, summed_by_family);
    reader.restart();
    KeptStacks shown_stacks([&](uint32_t stack) {
      return summed_family(stack) ? summed_stacks.count(stack) != 0 : chosen.count(family_of(stack)) != 0;
    });
    std::unique_ptr<RunAnalysis> shown =
        analyze_sites(reader, at, marks, options, shown_stacks.predicate(), false, std::move(symbolizer), sums);
    reader.check_unchanged();  // each restart checked the part before it
    shown->read_in_parts = RunAnalysis::CountsInParts{kept.counts, kept.verdicts, kept.unjudged_groups, kept.unjudged_bytes};
    auto summed_site = [&](uint32_t site) {
      return summed_by_family(family_of(shown_stacks.stream_id(shown->state.sites()[site].stack)));
    };
    kept.sum_holders(&shown->peak, false, summed_site);
    kept.sum_holders(&shown->device_peak, true, summed_site);
    shown->parts_read = parts;
    shown->teardown.freed_bytes = kept.teardown_freed_bytes;
    set_owners(*shown, kept.owners);
    shown->live_bytes_by_domain = kept.live_bytes_by_domain;
    if (!shown->residency.empty()) shown->residency.back().tracked_bytes = kept.live_bytes_by_domain;
    shown->findings = untracked_growth(shown->residency);
    return shown;
  } catch (const StreamError&) {
    reader.check_unchanged();  // a stream rewritten under the read is said as such, not as what it broke
    throw;
  }
}

}  // namespace leakscope::report
