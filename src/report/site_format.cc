#include "report/site_format.h"

#include <fmt/format.h>

#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;
using internal::SnapshotReason;

std::string ended_by(const SnapshotInfo& snapshot) {
  if (!snapshot.final) return "running or killed";
  if (snapshot.reason == SnapshotReason::kSignal) return fmt::format("signal {}", snapshot.signal_number);
  return "exit";
}

nlohmann::json run_header_json(const RunState& state) {
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
  document["sample_interval_bytes"] = state.process().sample_interval;
  nlohmann::json domains = nlohmann::json::object();
  auto totals = live_bytes_by_domain(state);
  for (size_t d = 0; d < totals.size(); ++d) {
    if (totals[d] != 0) domains[domain_name(static_cast<Domain>(d))] = totals[d];
  }
  document["live_bytes_by_domain"] = domains;
  return document;
}

namespace {

nlohmann::json frame_json(const SymbolizedFrame& frame) {
  nlohmann::json json;
  json["function"] = frame.function.empty() ? nlohmann::json() : nlohmann::json(frame.function);
  json["file"] = frame.file.empty() ? nlohmann::json() : nlohmann::json(frame.file);
  json["line"] = frame.line > 0 ? nlohmann::json(frame.line) : nlohmann::json();
  json["module"] = frame.module;
  json["address"] = fmt::format("{:#x}", frame.address);
  json["offset"] = fmt::format("{:#x}", frame.module_offset);
  json["inlined"] = frame.inlined;
  if (frame.folded > 0) json["folded"] = frame.folded;
  return json;
}

// shorten() fits a function name into `width` columns: first without its parameter list (the
// parenthesis that matches the final one), then without "(anonymous namespace)::", then keeping
// the end, which holds the function's own name.
std::string shorten(const std::string& function, size_t width) {
  if (function.size() <= width) return function;
  std::string name = function;
  size_t close = name.rfind(')');
  if (close != std::string::npos) {
    int depth = 0;
    for (size_t i = close + 1; i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        if (i > 0) name = name.substr(0, i) + "(…)";
        break;
      }
    }
  }
  for (size_t at; name.size() > width && (at = name.find("(anonymous namespace)::")) != std::string::npos;) {
    name.erase(at, 23);
  }
  if (name.size() <= width) return name;
  return "…" + name.substr(name.size() - (width > 1 ? width - 1 : width));
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

nlohmann::json site_json(const SiteSummary& site, Symbolizer& symbolizer, const FrameFolder& folder) {
  nlohmann::json entry;
  entry["domain"] = domain_name(site.domain);
  entry["live_bytes"] = site.live_bytes;
  entry["live_blocks"] = site.live_blocks;
  nlohmann::json frames = nlohmann::json::array();
  for (const SymbolizedFrame& frame : folder.fold(symbolizer.stack(site.stack))) frames.push_back(frame_json(frame));
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
  nlohmann::json births = nlohmann::json::array();
  for (const LiveByBirth& birth : site.births) births.push_back({{"birth_s", birth.birth_s}, {"bytes", birth.bytes}});
  entry["live_bytes_by_birth"] = births;
  return entry;
}

std::string frame_text(const SymbolizedFrame& frame, size_t width) {
  std::string where = frame.function.empty() ? fmt::format("{:#x}", frame.address) : frame.function;
  std::string file = frame.file.empty() ? "" : fmt::format(" ({}:{})", base_name(frame.file), frame.line);
  std::string module = frame.module.find(" (") == std::string::npos ? base_name(frame.module) : frame.module;
  if (frame.folded > 0) return frame.function;
  std::string tail = file + (frame.inlined ? " (inlined)" : " [" + module + "]");
  size_t room = width > tail.size() + 12 ? width - tail.size() : 12;
  return shorten(where, room) + tail;
}

std::string owners_text(const SiteSummary& site) {
  std::string threads;
  for (const ThreadShare& thread : site.threads) {
    threads += fmt::format("{}{} {}", threads.empty() ? "" : ", ", thread.name.empty() ? "?" : thread.name,
                           format_bytes(thread.live_bytes));
  }
  std::string tasks;
  for (const TaskShare& task : site.tasks) {
    tasks += fmt::format("{}{} {}", tasks.empty() ? "" : ", ", task.name.empty() ? "(no task)" : task.name,
                         format_bytes(task.live_bytes));
  }
  return fmt::format("threads: {} · tasks: {}", threads, tasks);
}

std::string site_signature(const SiteSummary& site, Symbolizer& symbolizer) {
  std::string signature = domain_name(site.domain);
  for (const SymbolizedFrame& frame : symbolizer.stack(site.stack)) {
    signature += '|';
    signature += frame.function.empty() ? fmt::format("{}+{:#x}", base_name(frame.module), frame.module_offset)
                                        : frame.function;
  }
  return signature;
}

}  // namespace leakscope::report
