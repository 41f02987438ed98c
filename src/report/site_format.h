// File: site_format.h
//
// How a site, its frames and the run's header are written, shared by dump, report and diff so
// that the same thing always reads the same (docs/FORMAT.md).
#ifndef LEAKSCOPE_REPORT_SITE_FORMAT_H_
#define LEAKSCOPE_REPORT_SITE_FORMAT_H_

#include <array>
#include <string>

#include <nlohmann/json.hpp>

#include "report/frame_roles.h"
#include "report/run_state.h"
#include "report/site_summary.h"
#include "report/snapshot_choice.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// What every output says of the run: the stream, the snapshot shown (or judged) and its figures.
struct RunHeader {
  const RunState& state;  // read at least to the shown snapshot
  const ChosenSnapshot& at;
  const SnapshotInfo& shown;  // INFO of the shown snapshot
  const std::array<int64_t, internal::kDomainCount>& live_bytes_by_domain;  // at it
  const std::vector<DeviceMemory>& devices;  // at it
  const char* shown_word = "shown";  // "judged" in a report
};

// device_tracking_failure() says why device memory is not tracked though the cuda option asked
// for it, or nullptr when it is, or was not asked for.
const char* device_tracking_failure(internal::DeviceTracking tracking);

// run_header_json() holds the fields every JSON document starts with (version, process, start
// time, snapshots, the shown snapshot and why, how the stream ended, memory, live bytes by domain).
nlohmann::json run_header_json(const RunHeader& header);

// run_header_text() is the opening lines of dump and report: the program, when it started, how
// long it ran and how it ended, which snapshot is shown and why, and its memory.
std::string run_header_text(const RunHeader& header, const std::string& title);

// wall_clock_text() is a wall-clock time as "2026-12-01 08:39:10 UTC"; wall_clock_iso() as
// "2026-12-01T08:39:10.123Z".
std::string wall_clock_text(uint64_t realtime_ns);
std::string wall_clock_iso(uint64_t realtime_ns);

// site_json() is one entry of "sites": domain, live bytes and blocks, frames (folded by `folder`),
// threads, tasks.
nlohmann::json site_json(const SiteSummary& site, Symbolizer& symbolizer, const FrameFolder& folder = FrameFolder(""));
nlohmann::json site_json(const SiteSummary& site, const std::vector<SymbolizedFrame>& frames,
                         const FrameFolder& folder = FrameFolder(""));

// frame_json() is one frame of "frames": function, file, line, module, address, offset, inlined.
nlohmann::json frame_json(const SymbolizedFrame& frame);

// function_text() is a frame's function without its parameter list, shortened to `width` columns
// (its address and module when the function is unknown).
std::string function_text(const SymbolizedFrame& frame, size_t width);

// frame_name() names a frame in a line of text: "parse_record (steady_leak_ci.c:17)", the
// function (function_text()) and, when known, its source file's name and line.
std::string frame_name(const SymbolizedFrame& frame, size_t width);

// frame_text() is "function (file:line) [module]", the function shortened to `width` columns.
std::string frame_text(const SymbolizedFrame& frame, size_t width = 1000);

// part_labels() says how each of a group's shown parts (its folded stack, innermost first) is told
// from the others, in at most `width` columns: by its innermost frame (`at parse (p.c:3)`) when no
// other part has that one, else by the frame past what it shares with the part most like it
// (`via serve_grpc (server.c:27)`: parts share the group's frames and often more, one handler
// reached from three transports), a function on its path alone. Where a part cannot be named so
// (a recursion's frames repeat; another part passes through that function too, on a path of one
// more frame or a second level of callers) or the names would read alike as printed, every part is
// named by its innermost frame.
std::vector<std::string> part_labels(const std::vector<std::vector<SymbolizedFrame>>& stacks, size_t width);

// owners_text() is "threads: a (tid 1) 2 MiB, ... · tasks: request 2 MiB".
std::string owners_text(const SiteSummary& site);


}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SITE_FORMAT_H_
