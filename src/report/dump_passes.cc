#include "report/dump_passes.h"

#include <algorithm>
#include <unordered_map>

#include "core/intern_table.h"

namespace leakscope::report {
namespace {

// keep_largest() keeps the sites holding at least `min_bytes` (and, with `task`, some bytes of
// that task) and, when `top` is not 0, only the `top` holding the most (the sites come largest
// first).
void keep_largest(JudgedSites* judged, const DumpSelection& selection) {
  std::erase_if(judged->sites, [&](const CapturedSite& site) {
    if (site.live_bytes < selection.min_bytes) return true;
    if (selection.task.empty()) return false;
    bool holds = false;
    judged->captures.for_each_task(site, [&](const std::string& name, int64_t bytes, int64_t) {
      holds = holds || (name == selection.task && bytes > 0);
    });
    return !holds;
  });
  if (selection.top != 0 && judged->sites.size() > selection.top) judged->sites.resize(selection.top);
}

// The order a dump writes its sites in, whichever pass found them.
bool written_before(const DumpSite& a, const DumpSite& b) {
  return a.summary.live_bytes != b.summary.live_bytes ? a.summary.live_bytes > b.summary.live_bytes
                                                      : a.summary.site < b.summary.site;
}

}  // namespace

DumpRead::DumpRead(StreamReader& reader, const ChosenSnapshot& at, const DumpSelection& selection) {
  if (selection.top == 0 || selection.site_memory == 0) {
    whole_ = read_pass(reader, at, selection, nullptr);
    if (selection.top == 0) {
      symbolizer_ = std::make_unique<Symbolizer>(state_);
      return;
    }
    keep_shown(whole_);
    whole_ = JudgedSites();
    return;
  }
  // The first pass keeps every stack's sites until it has as many as the budget allows: a stream
  // that has no more is read once. One that has goes on being read, keeping no more, for the
  // number of its stacks.
  uint64_t per_pass = std::max<uint64_t>(1, selection.site_memory / kDumpBytesPerSite);
  JudgedSites first = read_pass(reader, at, selection,
                                [asked = uint64_t{0}, per_pass](uint32_t) mutable { return asked++ < per_pass; });
  uint64_t stacks = state_.stream_stack_count() + 1;  // each asked once, and stack 0, no stack
  if (stacks <= per_pass) {
    keep_shown(first);
    return;
  }
  first = JudgedSites();
  uint64_t parts = std::min<uint64_t>((stacks + per_pass - 1) / per_pass, kMaxDumpParts);
  read_parts(reader, at, selection, static_cast<uint32_t>(parts));
}

DumpRead::~DumpRead() = default;

size_t DumpRead::shown_count() const { return symbolizer_ ? whole_.sites.size() : kept_.size(); }

void DumpRead::read_parts(StreamReader& reader, const ChosenSnapshot& at, const DumpSelection& selection, uint32_t parts) {
  passes_ = 1;  // the pass that counted the stacks
  left_out_ = 0;
  by_domain_ = {};
  for (uint32_t part = 0; part < parts; ++part) {
    reader.restart();
    JudgedSites judged;
    try {
      judged = read_pass(reader, at, selection, [parts, part](uint32_t stack) { return internal::hash_mix(stack) % parts == part; });
    } catch (const StreamError&) {
      reader.check_unchanged();  // a stream rewritten under the read is said as such, not as what it broke
      throw;
    }
    keep_shown(judged);
    std::sort(kept_.begin(), kept_.end(), written_before);
    if (kept_.size() > selection.top) {
      left_out_ += kept_.size() - selection.top;
      kept_.resize(selection.top);
    }
  }
  reader.check_unchanged();  // each restart checked the part before it
}

JudgedSites DumpRead::read_pass(StreamReader& reader, const ChosenSnapshot& at, const DumpSelection& selection,
                                std::function<bool(uint32_t)> keep) {
  state_ = RunState();
  if (keep) state_.keep_sites_of(std::move(keep));
  JudgedCapture capture(at);
  read_run(reader, at.index, &state_, [&capture](const RunState& read) { capture.observe(read); }, passes_ == 0);
  ++passes_;
  shown_ = capture.info();
  devices_ = capture.devices();
  for (size_t domain = 0; domain < by_domain_.size(); ++domain) by_domain_[domain] += capture.live_bytes_by_domain()[domain];
  JudgedSites judged = capture.take_sites();
  size_t all = judged.sites.size();
  keep_largest(&judged, selection);
  left_out_ += all - judged.sites.size();
  return judged;
}

void DumpRead::keep_shown(const JudgedSites& judged) {
  if (parts_symbolizer_) {
    parts_symbolizer_->rebind(state_);
  } else {
    parts_symbolizer_ = std::make_unique<Symbolizer>(state_);
  }
  std::unordered_map<uint32_t, LostFigures> lost = lost_by_site(state_);
  for (const CapturedSite& site : judged.sites) kept_.push_back(site_of(site, judged.captures, *parts_symbolizer_, lost));
}

DumpSite DumpRead::site_of(const CapturedSite& captured, const SiteCaptures& captures, Symbolizer& symbolizer,
                           const std::unordered_map<uint32_t, LostFigures>& lost) const {
  DumpSite site;
  site.summary = captures.summary(state_, captured);
  site.frames = symbolizer.stack(site.summary.stack);
  auto found = lost.find(captured.site);
  if (found != lost.end()) site.lost = found->second;
  site.summary.site = state_.stream_site_id(captured.site);
  return site;
}

NextDumpSite DumpRead::sites() {
  if (!symbolizer_) {
    return [this, next = size_t{0}](DumpSite* site) mutable {
      if (next == kept_.size()) return false;
      *site = std::move(kept_[next++]);
      return true;
    };
  }
  // Every site of one pass: each summarized and symbolized as it is written, never all at once.
  auto lost = std::make_shared<std::unordered_map<uint32_t, LostFigures>>(lost_by_site(state_));
  return [this, lost, next = size_t{0}](DumpSite* site) mutable {
    if (next == whole_.sites.size()) return false;
    *site = site_of(whole_.sites[next++], whole_.captures, *symbolizer_, *lost);
    return true;
  };
}

}  // namespace leakscope::report
