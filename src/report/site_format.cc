#include "report/site_format.h"

#include <time.h>

#include <algorithm>

#include <fmt/format.h>

#include "report/text_layout.h"
#include "report/units.h"

namespace leakscope::report {

using internal::domain_name;

namespace {

std::string utc_text(uint64_t realtime_ns, const char* format) {
  time_t seconds = static_cast<time_t>(realtime_ns / 1000000000);
  struct tm utc;
  gmtime_r(&seconds, &utc);
  char text[64];
  strftime(text, sizeof(text), format, &utc);
  return text;
}

const char* device_tracking_name(internal::DeviceTracking tracking) {
  switch (tracking) {
    case internal::DeviceTracking::kNotAsked: return "off";
    case internal::DeviceTracking::kWaiting: return "waiting";
    case internal::DeviceTracking::kTracking: return "on";
    case internal::DeviceTracking::kNoCupti: return "no_cupti";
    case internal::DeviceTracking::kCuptiHeld: return "cupti_held";
    case internal::DeviceTracking::kCuptiFailed: return "cupti_failed";
    case internal::DeviceTracking::kNotBuilt: return "not_built";
  }
  return "unknown";
}

// device_text() is one device's line: its domains, the caching allocator's reserve in use, and
// what the driver says.
std::string device_text(const DeviceMemory& device) {
  std::string text = device.device < 0 ? "device ?:" : fmt::format("device {}:", device.device);
  std::string domains;
  for (size_t d = 0; d < device.live_bytes.size(); ++d) {
    if (device.live_bytes[d] == 0) continue;
    domains += fmt::format("{} {} {}", domains.empty() ? "" : " ·", domain_name(kDeviceDomains[d]),
                           format_bytes(static_cast<int64_t>(device.live_bytes[d])));
    if (kDeviceDomains[d] == Domain::kCuda && device.inner_bytes != 0) {
      domains += fmt::format(" ({} of it in c10_cuda tensors)", format_bytes(static_cast<int64_t>(device.inner_bytes)));
    }
  }
  text += domains.empty() ? " nothing tracked" : domains;
  if (device.reserved_bytes != 0) {
    text += fmt::format(" · address space reserved {}", format_bytes(static_cast<int64_t>(device.reserved_bytes)));
  }
  if (device.driver_total_bytes != 0) {
    text += fmt::format(" · the driver: {} used of {}", format_bytes(static_cast<int64_t>(device.driver_used_bytes)),
                        format_bytes(static_cast<int64_t>(device.driver_total_bytes)));
  }
  return text;
}

}  // namespace

const char* device_tracking_failure(internal::DeviceTracking tracking) {
  switch (tracking) {
    case internal::DeviceTracking::kNoCupti: return "no libcupti could be loaded (name one with --option cupti=PATH)";
    case internal::DeviceTracking::kCuptiHeld:
      return "another tool held CUPTI's one subscriber slot (a profiler such as Nsight or torch.profiler; the run's stderr names it)";
    case internal::DeviceTracking::kCuptiFailed: return "CUPTI refused the subscription (the run's stderr says why)";
    case internal::DeviceTracking::kNotBuilt: return "this libleakscope was built without CUDA";
    default: return nullptr;
  }
}

std::string wall_clock_text(uint64_t realtime_ns) { return utc_text(realtime_ns, "%Y-%m-%d %H:%M:%S UTC"); }

std::string wall_clock_iso(uint64_t realtime_ns) {
  return fmt::format("{}.{:03d}Z", utc_text(realtime_ns, "%Y-%m-%dT%H:%M:%S"), static_cast<int>(realtime_ns / 1000000 % 1000));
}

nlohmann::json run_header_json(const RunHeader& header) {
  const RunState& state = header.state;
  const SnapshotInfo& shown = header.shown;
  nlohmann::json document;
  document["version"] = 1;
  document["process"] = {{"pid", state.process().pid},
                         {"ppid", state.process().ppid},
                         {"traced_parent_pid", state.process().traced_parent_pid},
                         {"exe", state.process().exe},
                         {"argv", state.process().argv}};
  document["start_time"] = wall_clock_iso(state.process().start_realtime_ns);
  document["start_time_unix_s"] = static_cast<double>(state.process().start_realtime_ns) / 1e9;
  document["snapshots"] = header.at.count;
  document["snapshot"] = header.at.index;
  document["snapshot_chosen"] = header.at.why;
  document["teardown_snapshot"] = header.at.teardown != 0 ? nlohmann::json(header.at.teardown) : nlohmann::json();
  document["collection_snapshot"] = header.at.collection != 0 ? nlohmann::json(header.at.collection) : nlohmann::json();
  document["epoch"] = shown.epoch;
  document["time_s"] = static_cast<double>(shown.time_ns) / 1e9;
  document["duration_s"] = static_cast<double>(header.at.last.time_ns) / 1e9;
  document["ended_by"] = ended_by(header.at.last);
  document["rss_bytes"] = shown.rss_bytes;
  document["pss_bytes"] = shown.pss_bytes;
  document["peak_rss_bytes"] = shown.hwm_bytes;
  document["overhead_bytes"] = shown.overhead_bytes;
  document["peak_overhead_bytes"] = std::max(shown.peak_overhead_bytes, shown.overhead_bytes);
  document["reserved_bytes"] = shown.reserved_bytes;
  const BudgetTimes& budget = state.budget_times();
  auto seconds_or_null = [](const std::optional<uint64_t>& ns) {
    return ns ? nlohmann::json(static_cast<double>(*ns) / 1e9) : nlohmann::json();
  };
  document["memory_budget"] = {{"coarse_stacks_since_s", seconds_or_null(budget.coarse_stacks_ns)},
                               {"counting_only_since_s", seconds_or_null(budget.counting_only_ns)}};
  StartupStacks startup = state.startup_stacks();
  document["startup_stacks"] = {{"stacks", startup.stacks}, {"kept_frames", startup.kept_frames}};
  document["sample_interval_bytes"] = state.process().sample_interval;
  nlohmann::json domains = nlohmann::json::object();
  for (size_t d = 0; d < header.live_bytes_by_domain.size(); ++d) {
    if (header.live_bytes_by_domain[d] != 0) domains[domain_name(static_cast<Domain>(d))] = header.live_bytes_by_domain[d];
  }
  document["live_bytes_by_domain"] = domains;
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceMemory& device : header.devices) {
    nlohmann::json live = nlohmann::json::object();
    for (size_t d = 0; d < device.live_bytes.size(); ++d) live[domain_name(kDeviceDomains[d])] = device.live_bytes[d];
    devices.push_back({{"device", device.device < 0 ? nlohmann::json() : nlohmann::json(device.device)},
                       {"live_bytes", live},
                       {"c10_cuda_inside_cuda_bytes", device.inner_bytes},
                       {"reserved_address_space_bytes", device.reserved_bytes},
                       {"driver_used_bytes", device.driver_total_bytes != 0 ? nlohmann::json(device.driver_used_bytes) : nlohmann::json()},
                       {"driver_total_bytes", device.driver_total_bytes != 0 ? nlohmann::json(device.driver_total_bytes) : nlohmann::json()}});
  }
  document["devices"] = devices;
  document["device_tracking"] = device_tracking_name(shown.device_tracking);
  return document;
}

std::string run_header_text(const RunHeader& header, const std::string& title) {
  const RunState& state = header.state;
  const SnapshotInfo& shown = header.shown;
  std::string out = fmt::format("{}: {} (pid {})\n", title, state.process().exe, state.process().pid);
  out += wrap(fmt::format("started {} · ran {} · {} snapshots · {}", wall_clock_text(state.process().start_realtime_ns),
                          format_seconds(header.at.last.time_ns), header.at.count, ended_by_text(header.at.last)),
              "   ", "");
  out += wrap(fmt::format("{}: snapshot {} at {} ({})", header.shown_word, header.at.index, format_seconds(shown.time_ns),
                          header.at.why),
              "   ", "");
  std::string domains;
  for (size_t d = 0; d < header.live_bytes_by_domain.size(); ++d) {
    if (header.live_bytes_by_domain[d] == 0) continue;
    domains += fmt::format("{}{} {}", domains.empty() ? "" : " · ", domain_name(static_cast<Domain>(d)),
                           format_bytes(header.live_bytes_by_domain[d]));
  }
  out += fmt::format("live: {}\n", domains.empty() ? "nothing" : domains);
  if (shown.reserved_bytes != 0) {
    out += fmt::format("reserved address space: {} (mapped PROT_NONE: not memory until made accessible)\n",
                       format_bytes(static_cast<int64_t>(shown.reserved_bytes)));
  }
  for (const DeviceMemory& device : header.devices) out += wrap(device_text(device), "   ", "");
  if (const char* why = device_tracking_failure(shown.device_tracking)) {
    out += wrap(fmt::format("device memory: not tracked, though the cuda option asked for it: {}", why), "   ", "");
  }
  std::string own = format_bytes(static_cast<int64_t>(shown.overhead_bytes));
  if (shown.peak_overhead_bytes > shown.overhead_bytes) {
    own += fmt::format(" (peak {})", format_bytes(static_cast<int64_t>(shown.peak_overhead_bytes)));
  }
  std::string memory = fmt::format("RSS {} (peak {}) · PSS {}", format_bytes(static_cast<int64_t>(shown.rss_bytes)),
                                   format_bytes(static_cast<int64_t>(shown.hwm_bytes)),
                                   format_bytes(static_cast<int64_t>(shown.pss_bytes)));
  std::string overhead = "leakscope's own memory " + own;
  // One line when it fits, else leakscope's own memory on a line of its own.
  out += memory + (memory.size() + overhead.size() <= 96 ? " · " : "\n") + overhead + "\n";
  const BudgetTimes& budget = state.budget_times();
  if (budget.coarse_stacks_ns) {
    std::string text = fmt::format(
        "leakscope's memory budget (max_memory) was near by {}: stacks first seen after it keep {} frames",
        format_seconds(*budget.coarse_stacks_ns), internal::kBudgetStackDepth);
    if (budget.counting_only_ns) {
      text += fmt::format("; it was reached by {}: allocations at stacks first seen after it are counted, exactly, "
                          "under one site",
                          format_seconds(*budget.counting_only_ns));
    }
    out += wrap(text, "   ", "");
  }
  if (StartupStacks startup = state.startup_stacks(); startup.stacks != 0) {
    std::string kept = startup.kept_frames == 1 ? "their innermost frame" : fmt::format("{} frames", startup.kept_frames);
    out += wrap(fmt::format("start-up: {} stacks of blocks under 64 KiB allocated before main, in dlopen or in an import keep {} "
                            "and what started them (startup_depth=0 keeps them whole)",
                            startup.stacks, kept),
                "   ", "");
  }
  if (state.process().sample_interval != 0) {
    // Tensor storage (c10_cpu) is sampled too, named only where the program has some.
    bool tensors = header.live_bytes_by_domain[static_cast<size_t>(Domain::kC10Cpu)] != 0;
    out += fmt::format("sampled: one allocation per {} on average; heap {}bytes and blocks are estimates\n",
                       format_bytes(static_cast<int64_t>(state.process().sample_interval)), tensors ? "and c10_cpu " : "");
  }
  return out;
}

nlohmann::json frame_json(const SymbolizedFrame& frame) {
  nlohmann::json json;
  json["function"] = frame.function.empty() ? nlohmann::json() : nlohmann::json(frame.function);
  json["file"] = frame.file.empty() ? nlohmann::json() : nlohmann::json(frame.file);
  json["line"] = frame.line > 0 ? nlohmann::json(frame.line) : nlohmann::json();
  json["module"] = frame.module;
  json["language"] = frame.language.empty() ? "native" : frame.language;
  bool native = frame.language.empty();
  json["address"] = native ? nlohmann::json(fmt::format("{:#x}", frame.address)) : nlohmann::json();
  json["offset"] = native ? nlohmann::json(fmt::format("{:#x}", frame.module_offset)) : nlohmann::json();
  json["inlined"] = frame.inlined;
  if (frame.folded > 0) json["folded"] = frame.folded;
  return json;
}

namespace {

// without_parameters() cuts a function name before the parenthesis that matches its final one.
std::string without_parameters(const std::string& function) {
  // A name in brackets is one of leakscope's markers ("[import; frames in between left out
  // (startup_depth)]"): its parentheses are words, not parameters.
  if (!function.empty() && function.front() == '[') return function;
  size_t close = function.rfind(')');
  if (close == std::string::npos) return function;
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (function[i] == ')') ++depth;
    if (function[i] != '(' || --depth != 0) continue;
    // "Handler::operator()" named without its parameters: the parentheses are the name's.
    if (i + 1 == close && i >= 8 && function.compare(i - 8, 8, "operator") == 0) return function;
    return i > 0 ? function.substr(0, i) : function;
  }
  return function;
}

// shorten() fits a function name into `width` columns: first without its parameter list, then
// without "(anonymous namespace)::", then keeping the end, which holds the function's own name.
std::string shorten(const std::string& function, size_t width, bool keep_ellipsis = true) {
  if (function.size() <= width) return function;
  std::string name = without_parameters(function);
  if (keep_ellipsis && name.size() < function.size()) name += "(…)";
  for (size_t at; name.size() > width && (at = name.find("(anonymous namespace)::")) != std::string::npos;) {
    name.erase(at, 23);
  }
  if (name.size() <= width) return name;
  // A marker frame's name says first what it stands for ("[import; frames in between left out
  // ..."); a function's says last which one it is ("...::Parser::parse").
  // Cut between characters, not inside one (a UTF-8 continuation byte is 10xxxxxx).
  auto inside_character = [&](size_t at) { return at < name.size() && (static_cast<unsigned char>(name[at]) & 0xc0) == 0x80; };
  size_t kept = width > 1 ? width - 1 : width;
  if (name.front() == '[') {
    size_t end = kept;
    while (end > 0 && inside_character(end)) --end;
    return name.substr(0, end) + "…";
  }
  size_t begin = name.size() - kept;
  while (inside_character(begin)) ++begin;
  return "…" + name.substr(begin);
}

}  // namespace

nlohmann::json site_json(const SiteSummary& site, Symbolizer& symbolizer, const FrameFolder& folder) {
  return site_json(site, symbolizer.stack(site.stack), folder);
}

nlohmann::json site_json(const SiteSummary& site, const std::vector<SymbolizedFrame>& frames, const FrameFolder& folder) {
  nlohmann::json entry;
  entry["site"] = site.site;
  entry["domain"] = domain_name(site.domain);
  entry["live_bytes"] = site.live_bytes;
  entry["live_blocks"] = site.live_blocks;
  entry["allocations"] = site.allocations;
  entry["temporary_allocations"] = site.temporary_allocations;
  nlohmann::json folded = nlohmann::json::array();
  for (const SymbolizedFrame& frame : folder.fold(frames)) folded.push_back(frame_json(frame));
  entry["frames"] = folded;
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

std::string function_text(const SymbolizedFrame& frame, size_t width) {
  if (frame.function.empty()) return fmt::format("{:#x} [{}]", frame.address, module_base_name(frame.module));
  std::string name = without_parameters(frame.function);
  for (size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;) name.erase(at, 23);
  return shorten(name, width, false);
}

std::string frame_name(const SymbolizedFrame& frame, size_t width) {
  std::string name = function_text(frame, width);
  if (!frame.file.empty()) name += fmt::format(" ({}:{})", module_base_name(frame.file), frame.line);
  return name;
}

std::string frame_text(const SymbolizedFrame& frame, size_t width) {
  std::string where = frame.function.empty() ? fmt::format("{:#x}", frame.address) : frame.function;
  std::string file = frame.file.empty() ? "" : fmt::format(" ({}:{})", module_base_name(frame.file), frame.line);
  std::string module = frame.module.find(" (") == std::string::npos ? module_base_name(frame.module) : frame.module;
  if (frame.folded > 0) return frame.function;
  std::string tail = file + (frame.inlined ? " (inlined)" : module.empty() ? "" : " [" + module + "]");
  // The function's name comes first; where it is from is cut when they do not fit together.
  if (tail.size() + 20 > width) tail = file.size() + 20 <= width ? file : "";
  size_t room = width > tail.size() + 12 ? width - tail.size() : 12;
  return shorten(where, room) + tail;
}

namespace {

// part_frame_text() is `frame` in at most `width` columns: its function without parameters and
// where it is, or its address and module.
std::string part_frame_text(const SymbolizedFrame& frame, size_t width) {
  if (frame.function.empty() || frame.folded > 0) return frame_text(frame, width);
  std::string where = frame.file.empty() ? " [" + module_base_name(frame.module) + "]"
                                         : fmt::format(" ({}:{})", module_base_name(frame.file), frame.line);
  // The name first: where it is goes when both do not fit (a name is cut to 16 columns at most).
  size_t name_room = std::min<size_t>(function_text(frame, 1000).size(), 16);
  if (where.size() + name_room > width) where.clear();
  return function_text(frame, width > where.size() ? width - where.size() : 1) + where;
}

// same_code_name() is a native frame's function as its copies share it: without the suffix the
// compiler gives a specialized copy (`handle.constprop.0`), and without what encloses it, which an
// inlined copy's name may lack (a lambda's `operator()`). Two frames of one name may still be two
// functions: this only errs towards calling them alike.
std::string same_code_name(const SymbolizedFrame& frame) {
  std::string name = function_text(frame, 1000);
  if (!frame.language.empty()) return name;  // an interpreted function's qualified name is its own
  int depth = 0;
  size_t last = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(' || c == '{' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == '}' || c == ']') --depth;
    if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') last = i + 2;
    if (depth == 0 && c == '.') {
      name.resize(i);
      break;
    }
  }
  return name.substr(std::min(last, name.size()));
}

}  // namespace

std::vector<std::string> part_labels(const std::vector<std::vector<SymbolizedFrame>>& stacks, size_t width) {
  size_t count = stacks.size();
  // Each frame's name as printed, and its function as its copies share it, made once.
  std::vector<std::vector<std::string>> names(count), functions(count);
  for (size_t i = 0; i < count; ++i) {
    for (const SymbolizedFrame& frame : stacks[i]) {
      names[i].push_back(frame_name(frame, 1000));
      functions[i].push_back(same_code_name(frame));
    }
  }
  auto shared_depth = [&](size_t a, size_t b) {
    size_t depth = 0;
    while (depth < names[a].size() && depth < names[b].size() && names[a][depth] == names[b][depth]) ++depth;
    return depth;
  };
  auto all_differ = [](const std::vector<std::string>& texts) {
    for (size_t i = 0; i < texts.size(); ++i) {
      if (std::count(texts.begin(), texts.end(), texts[i]) > 1) return false;
    }
    return true;
  };
  std::vector<std::string> at(count);
  for (size_t i = 0; i < count; ++i) {
    if (stacks[i].empty()) return std::vector<std::string>(count);
    at[i] = "at " + part_frame_text(stacks[i][0], width - 3);
  }
  std::vector<std::string> labels = at;
  for (size_t i = 0; i < count; ++i) {
    if (std::count(at.begin(), at.end(), at[i]) == 1) continue;  // its innermost frame tells it apart
    size_t depth = 0;
    for (size_t other = 0; other < count; ++other) {
      if (other != i) depth = std::max(depth, shared_depth(i, other));
    }
    if (depth >= stacks[i].size() || stacks[i][depth].folded > 0) return at;
    // Named by a function on its own path only: not one a recursion repeats nearer the allocation,
    // nor one another part it is told from passes through too (a path of one more frame; a second
    // level of callers). Only the parts that part from it there may have the function there, at
    // another line (one switch calling the same handler from each case).
    const std::string& function = functions[i][depth];
    if (std::find(functions[i].begin(), functions[i].begin() + depth, function) != functions[i].begin() + depth) return at;
    for (size_t other = 0; other < count; ++other) {
      if (other == i || at[other] != at[i]) continue;
      bool parts_there = shared_depth(i, other) == depth;
      for (size_t d = 0; d < functions[other].size(); ++d) {
        if (functions[other][d] == function && !(parts_there && d == depth)) return at;
      }
    }
    labels[i] = "via " + part_frame_text(stacks[i][depth], width - 4);
  }
  return all_differ(labels) ? labels : at;
}

std::string owners_text(const SiteSummary& site) {
  std::string threads;
  for (const ThreadShare& thread : site.threads) {
    // Threads that share a name (a pool's workers keep the program's) are told apart by tid.
    bool shared = std::count_if(site.threads.begin(), site.threads.end(),
                                [&](const ThreadShare& other) { return other.name == thread.name; }) > 1;
    std::string name = thread.name.empty() ? "?" : one_line(thread.name);
    if (shared) name += fmt::format(" (tid {})", thread.tid);
    threads += fmt::format("{}{} {}", threads.empty() ? "" : ", ", name, format_bytes(thread.live_bytes));
  }
  std::string tasks;
  for (const TaskShare& task : site.tasks) {
    tasks += fmt::format("{}{} {}", tasks.empty() ? "" : ", ", task.name.empty() ? "(no task)" : one_line(task.name),
                         format_bytes(task.live_bytes));
  }
  return fmt::format("threads: {} · tasks: {}", threads, tasks);
}

}  // namespace leakscope::report
