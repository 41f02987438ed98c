#include "report/dump_format.h"

#include <fmt/format.h>

#include "report/site_summary.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;
using internal::SnapshotReason;

namespace {

std::string ended_by(const SnapshotInfo& snapshot) {
  if (!snapshot.final) return "running or killed";
  if (snapshot.reason == SnapshotReason::kSignal) return fmt::format("signal {}", snapshot.signal_number);
  return "exit";
}

nlohmann::json frame_json(const SymbolizedFrame& frame) {
  nlohmann::json json;
  json["function"] = frame.function.empty() ? nlohmann::json() : nlohmann::json(frame.function);
  json["file"] = frame.file.empty() ? nlohmann::json() : nlohmann::json(frame.file);
  json["line"] = frame.line > 0 ? nlohmann::json(frame.line) : nlohmann::json();
  json["module"] = frame.module;
  json["address"] = fmt::format("{:#x}", frame.address);
  json["offset"] = fmt::format("{:#x}", frame.module_offset);
  return json;
}

std::string frame_text(const SymbolizedFrame& frame) {
  std::string where = frame.function.empty() ? fmt::format("{:#x}", frame.address) : frame.function;
  if (!frame.file.empty()) where += fmt::format(" ({}:{})", frame.file, frame.line);
  std::string module = frame.module;
  if (size_t slash = module.rfind('/'); slash != std::string::npos && module.find(" (") == std::string::npos) {
    module = module.substr(slash + 1);
  }
  return fmt::format("{} [{}]", where, module);
}

}  // namespace

nlohmann::json dump_json(const RunState& state, Symbolizer& symbolizer) {
  const SnapshotInfo& last = state.last_snapshot();
  nlohmann::json document;
  document["version"] = 1;
  document["process"] = {{"pid", state.process().pid},
                         {"ppid", state.process().ppid},
                         {"traced_parent_pid", state.process().traced_parent_pid},
                         {"exe", state.process().exe},
                         {"argv", state.process().argv}};
  document["snapshots"] = state.snapshot_count();
  document["epoch"] = last.epoch;
  document["duration_s"] = static_cast<double>(last.time_ns) / 1e9;
  document["ended_by"] = ended_by(last);
  document["rss_bytes"] = last.rss_bytes;
  document["pss_bytes"] = last.pss_bytes;
  document["peak_rss_bytes"] = last.hwm_bytes;
  document["overhead_bytes"] = last.overhead_bytes;
  nlohmann::json domains = nlohmann::json::object();
  auto totals = live_bytes_by_domain(state);
  for (size_t d = 0; d < totals.size(); ++d) {
    if (totals[d] != 0) domains[domain_name(static_cast<Domain>(d))] = totals[d];
  }
  document["live_bytes_by_domain"] = domains;
  nlohmann::json sites = nlohmann::json::array();
  for (const SiteSummary& site : summarize_live_sites(state)) {
    nlohmann::json entry;
    entry["domain"] = domain_name(site.domain);
    entry["live_bytes"] = site.live_bytes;
    entry["live_blocks"] = site.live_blocks;
    nlohmann::json frames = nlohmann::json::array();
    for (const SymbolizedFrame& frame : symbolizer.stack(site.stack)) frames.push_back(frame_json(frame));
    entry["frames"] = frames;
    nlohmann::json threads = nlohmann::json::array();
    for (const ThreadShare& thread : site.threads) {
      threads.push_back({{"name", thread.name}, {"tid", thread.tid}, {"live_bytes", thread.live_bytes},
                         {"live_blocks", thread.live_blocks}});
    }
    entry["threads"] = threads;
    nlohmann::json tasks = nlohmann::json::array();
    for (const TaskShare& task : site.tasks) {
      tasks.push_back({{"name", task.name.empty() ? nlohmann::json() : nlohmann::json(task.name)},
                       {"live_bytes", task.live_bytes},
                       {"live_blocks", task.live_blocks}});
    }
    entry["tasks"] = tasks;
    sites.push_back(std::move(entry));
  }
  document["sites"] = std::move(sites);
  return document;
}

std::string dump_text(const RunState& state, Symbolizer& symbolizer, int max_frames) {
  const SnapshotInfo& last = state.last_snapshot();
  std::string out;
  out += fmt::format("{} (pid {}): {} snapshots over {}, ended by {}\n", state.process().exe, state.process().pid,
                     state.snapshot_count(), format_seconds(last.time_ns), ended_by(last));
  out += fmt::format("RSS {} (peak {}), PSS {}, leakscope overhead {}\n", format_bytes(static_cast<int64_t>(last.rss_bytes)),
                     format_bytes(static_cast<int64_t>(last.hwm_bytes)), format_bytes(static_cast<int64_t>(last.pss_bytes)),
                     format_bytes(static_cast<int64_t>(last.overhead_bytes)));
  auto totals = live_bytes_by_domain(state);
  std::string domains;
  for (size_t d = 0; d < totals.size(); ++d) {
    if (totals[d] == 0) continue;
    domains += fmt::format("{}{} {}", domains.empty() ? "" : ", ", domain_name(static_cast<Domain>(d)), format_bytes(totals[d]));
  }
  out += fmt::format("live: {}\n", domains.empty() ? "nothing" : domains);
  auto sites = summarize_live_sites(state);
  int rank = 0;
  for (const SiteSummary& site : sites) {
    out += fmt::format("\n#{} {} {} in {} block{}\n", ++rank, domain_name(site.domain), format_bytes(site.live_bytes),
                       site.live_blocks, site.live_blocks == 1 ? "" : "s");
    const auto& frames = symbolizer.stack(site.stack);
    for (size_t i = 0; i < frames.size() && static_cast<int>(i) < max_frames; ++i) {
      out += fmt::format("    {} {}\n", i == 0 ? "at" : "by", frame_text(frames[i]));
    }
    if (frames.size() > static_cast<size_t>(max_frames)) out += fmt::format("    ... {} more frames\n", frames.size() - max_frames);
    std::string owners;
    for (const ThreadShare& thread : site.threads) {
      owners += fmt::format("{}{} (tid {}) {}", owners.empty() ? "" : ", ", thread.name.empty() ? "?" : thread.name,
                            thread.tid, format_bytes(thread.live_bytes));
    }
    out += fmt::format("    threads: {}\n", owners);
    std::string tasks;
    for (const TaskShare& task : site.tasks) {
      tasks += fmt::format("{}{} {}", tasks.empty() ? "" : ", ", task.name.empty() ? "(no task)" : task.name,
                           format_bytes(task.live_bytes));
    }
    out += fmt::format("    tasks: {}\n", tasks);
  }
  return out;
}

}  // namespace leakscope::report
