#include "report/prometheus_format.h"

#include <map>

#include <fmt/format.h>

#include "report/frame_names.h"
#include "report/frame_roles.h"
#include "report/site_format.h"

namespace leakscope::report {
namespace {

// Label values escape backslash, double quote and line feed (the exposition format's rule).
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

class Exposition {
 public:
  explicit Exposition(const MetricsOptions& options) {
    for (const auto& [name, value] : options.labels) common_ += fmt::format("{}=\"{}\",", name, label_value(value));
  }

  void family(const char* name, const char* type, const char* help) {
    text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }

  // sample() writes one series; `labels` is "k=\"v\"," pairs (each ending in a comma) or empty.
  void sample(const char* name, const std::string& labels, double value) {
    std::string all = common_ + labels;
    if (!all.empty()) all.pop_back();
    text_ += all.empty() ? fmt::format("{} {}\n", name, value) : fmt::format("{}{{{}}} {}\n", name, all, value);
  }

  std::string take() { return std::move(text_); }

 private:
  std::string common_;
  std::string text_;
};

struct GroupSeries {
  std::string labels;
  double live_bytes = 0, rate = 0, entropy = 0;
  double lost_bytes = 0, indirectly_lost_bytes = 0;
  Verdict verdict = Verdict::kStartup;
};

constexpr Verdict kVerdicts[] = {Verdict::kLeak, Verdict::kCache, Verdict::kStartup, Verdict::kUnknown};

// severity() orders the verdicts of groups summed into one series: the series is a leak when
// one of them is, else unknown when one of them is (a cache beside an unjudged group may be
// neither), else a cache, else start-up.
int severity(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLeak: return 3;
    case Verdict::kUnknown: return 2;
    case Verdict::kCache: return 1;
    case Verdict::kStartup: return 0;
  }
  return 2;
}

std::string device_label(int device) { return device < 0 ? std::string("device=\"unknown\",") : fmt::format("device=\"{}\",", device); }
std::string device_label(const DeviceMemory& device) { return device_label(device.device); }

// write_devices() gives each device's memory series of its own: a dashboard of a multi-GPU
// service wants the device that fills up, not the sum.
void write_devices(const std::vector<DeviceMemory>& devices, const std::vector<DevicePeak>& peaks, Exposition& out) {
  out.family("leakscope_device_tracked_bytes", "gauge", "Live bytes leakscope tracks on a device, by domain (c10_cuda tensors lie inside cuda segments)");
  for (const DeviceMemory& device : devices) {
    for (size_t d = 0; d < device.live_bytes.size(); ++d) {
      out.sample("leakscope_device_tracked_bytes", device_label(device) + fmt::format("domain=\"{}\",", domain_name(kDeviceDomains[d])),
                 static_cast<double>(device.live_bytes[d]));
    }
  }
  out.family("leakscope_device_cached_bytes", "gauge", "Bytes of the caching allocator's segments on a device that no tensor holds: free for reuse");
  for (const DeviceMemory& device : devices) {
    int64_t segments = device.live(Domain::kCuda), inner = static_cast<int64_t>(device.inner_bytes);
    out.sample("leakscope_device_cached_bytes", device_label(device), static_cast<double>(inner != 0 && segments > inner ? segments - inner : 0));
  }
  out.family("leakscope_device_reserved_address_bytes", "gauge", "Device address space reserved (cuMemAddressReserve), not memory");
  for (const DeviceMemory& device : devices) {
    out.sample("leakscope_device_reserved_address_bytes", device_label(device), static_cast<double>(device.reserved_bytes));
  }
  out.family("leakscope_device_driver_used_bytes", "gauge", "Device memory in use as the driver reports it (cuMemGetInfo), every process's");
  for (const DeviceMemory& device : devices) {
    if (device.driver_total_bytes != 0) out.sample("leakscope_device_driver_used_bytes", device_label(device), static_cast<double>(device.driver_used_bytes));
  }
  out.family("leakscope_device_driver_total_bytes", "gauge", "Device memory in all, as the driver reports it (cuMemGetInfo)");
  for (const DeviceMemory& device : devices) {
    if (device.driver_total_bytes != 0) out.sample("leakscope_device_driver_total_bytes", device_label(device), static_cast<double>(device.driver_total_bytes));
  }
  out.family("leakscope_device_peak_bytes", "gauge",
             "The most the program took from the driver on a device up to the judged snapshot (cuda and cuda_managed blocks, tensors outside them)");
  for (const DevicePeak& peak : peaks) out.sample("leakscope_device_peak_bytes", device_label(peak.device), static_cast<double>(peak.bytes));
}

}  // namespace

bool valid_label_name(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string prometheus_metrics(RunAnalysis& analysis, const MetricsOptions& options) {
  // A group's series are named by its first user frame and domain, not by its verdict: a verdict
  // changes as a run goes on (unknown at first, then a leak or a cache), and a label that changes
  // would start a new series each time, breaking every graph and rate over it. The verdict is a
  // state set of its own, and the totals by verdict are series of their own.
  std::vector<GroupSeries> groups;
  std::map<std::string, size_t> index;  // labels -> position in groups
  GroupSeries others;                   // the groups beyond --top, summed
  others.labels = "function=\"(other)\",domain=\"all\",";
  std::map<Verdict, std::pair<double, double>> by_verdict;  // live bytes and growth of every group
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    const GroupReport& group = analysis.groups[g];
    auto& [verdict_bytes, verdict_growth] = by_verdict[group.verdict];
    verdict_bytes += static_cast<double>(group.live_bytes);
    verdict_growth += group.growth_bytes_per_min;
    GroupSeries* series = &others;
    if (g < options.top) {
      const char* domain = group.parts.empty() ? "heap" : domain_name(analysis.domain_of(analysis.sites[group.parts[0]]));
      // A frame without a name is named by its module and offset, as across runs: its address
      // moves with each run's layout, and would start a new series with every restart.
      const SymbolizedFrame& frame = *group.user_frame;
      std::string function = frame.function.empty() ? signature_frame_name(frame) : function_text(frame, 100);
      if (!frame.file.empty()) function += fmt::format(" ({}:{})", module_base_name(frame.file), frame.line);
      std::string labels = fmt::format("function=\"{}\",domain=\"{}\",", label_value(function), domain);
      // Groups of one frame told apart by their callers share these labels: one series, summed
      // (Prometheus refuses a scrape with two series of one label set); the entropy is the first's.
      auto [slot, added] = index.emplace(labels, groups.size());
      if (added) groups.push_back({labels, 0, 0, group_judgement(analysis, g).leak_entropy});
      series = &groups[slot->second];
      if (added || severity(group.verdict) > severity(series->verdict)) series->verdict = group.verdict;
    }
    series->live_bytes += static_cast<double>(group.live_bytes);
    series->rate += group.growth_bytes_per_min;
    series->lost_bytes += static_cast<double>(group.lost.bytes);
    series->indirectly_lost_bytes += static_cast<double>(group.lost.indirect_bytes);
  }
  size_t named = groups.size();
  if (analysis.groups.size() > options.top) groups.push_back(others);

  Exposition out(options);
  out.family("leakscope_live_bytes", "gauge", "Live bytes of a group of sites (one first user frame) at the judged snapshot");
  for (const GroupSeries& group : groups) out.sample("leakscope_live_bytes", group.labels, group.live_bytes);
  out.family("leakscope_leak_rate_bytes_per_minute", "gauge", "Growth of the group's live bytes (Theil-Sen slope of their floor)");
  for (const GroupSeries& group : groups) out.sample("leakscope_leak_rate_bytes_per_minute", group.labels, group.rate);
  out.family("leakscope_leak_entropy", "gauge", "Leak entropy of the group's live bytes over birth time (0..1)");
  for (size_t g = 0; g < named; ++g) out.sample("leakscope_leak_entropy", groups[g].labels, groups[g].entropy);
  out.family("leakscope_group_verdict", "gauge",
             "The group's verdict now: 1 on the series of its verdict, 0 on the others (leak, cache, startup, unknown)");
  for (size_t g = 0; g < named; ++g) {
    for (Verdict verdict : kVerdicts) {
      out.sample("leakscope_group_verdict", groups[g].labels + fmt::format("verdict=\"{}\",", verdict_name(verdict)),
                 groups[g].verdict == verdict ? 1 : 0);
    }
  }
  out.family("leakscope_verdict_live_bytes", "gauge", "Live bytes of every group of a verdict, those without series of their own included");
  for (Verdict verdict : kVerdicts) {
    out.sample("leakscope_verdict_live_bytes", fmt::format("verdict=\"{}\",", verdict_name(verdict)), by_verdict[verdict].first);
  }
  out.family("leakscope_verdict_growth_bytes_per_minute", "gauge", "Growth of every group of a verdict, summed");
  for (Verdict verdict : kVerdicts) {
    out.sample("leakscope_verdict_growth_bytes_per_minute", fmt::format("verdict=\"{}\",", verdict_name(verdict)),
               by_verdict[verdict].second);
  }
  if (analysis.state.leak_check()) {
    out.family("leakscope_lost_bytes", "gauge", "Bytes of the group no pointer reached at the leak check: direct, or only through lost blocks");
    for (const GroupSeries& group : groups) {
      out.sample("leakscope_lost_bytes", group.labels + "kind=\"direct\",", group.lost_bytes);
      out.sample("leakscope_lost_bytes", group.labels + "kind=\"indirect\",", group.indirectly_lost_bytes);
    }
  }
  const SnapshotInfo& judged = analysis.judged;
  out.family("leakscope_rss_bytes", "gauge", "Resident memory of the process");
  out.sample("leakscope_rss_bytes", "", static_cast<double>(judged.rss_bytes));
  out.family("leakscope_pss_bytes", "gauge", "Proportional set size of the process");
  out.sample("leakscope_pss_bytes", "", static_cast<double>(judged.pss_bytes));
  out.family("leakscope_tracked_bytes", "gauge", "Live bytes leakscope tracks, by domain");
  for (size_t d = 0; d < analysis.live_bytes_by_domain.size(); ++d) {
    out.sample("leakscope_tracked_bytes", fmt::format("domain=\"{}\",", domain_name(static_cast<Domain>(d))),
               static_cast<double>(analysis.live_bytes_by_domain[d]));
  }
  out.family("leakscope_peak_tracked_bytes", "gauge",
             "The most tracked host bytes (heap, mmap, brk, c10_cpu) any snapshot saw up to the judged one, high-water snapshots of bursts included");
  out.sample("leakscope_peak_tracked_bytes", "", static_cast<double>(analysis.peak.tracked_bytes));
  if (!analysis.devices.empty()) write_devices(analysis.devices, analysis.device_peaks, out);
  out.family("leakscope_own_memory_bytes", "gauge", "Memory leakscope itself holds in the process");
  out.sample("leakscope_own_memory_bytes", "", static_cast<double>(judged.overhead_bytes));
  out.family("leakscope_snapshots", "gauge", "Snapshots in the stream so far");
  out.sample("leakscope_snapshots", "", analysis.at.count);
  out.family("leakscope_process_running", "gauge", "1 while the stream has no final snapshot (the process runs, or was killed)");
  out.sample("leakscope_process_running", "", analysis.at.last.final ? 0 : 1);
  return out.take();
}

}  // namespace leakscope::report
