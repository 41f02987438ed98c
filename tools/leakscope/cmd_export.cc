// leakscope export: the judged run in the formats other tools read (pprof, folded stacks), and as
// one HTML page.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "report/folded_export.h"
#include "report/html_export.h"
#include "report/pprof_export.h"

namespace leakscope::cli {
namespace {

// writable() tells whether `path` can be created or replaced, without touching it: its directory
// takes new files, and a file already there can be written.
bool writable(const std::string& path) {
  std::filesystem::path file(path);
  std::filesystem::path directory = file.has_parent_path() ? file.parent_path() : ".";
  if (access(directory.c_str(), W_OK) != 0) return false;
  std::error_code error;
  return !std::filesystem::exists(file, error) || (std::filesystem::is_regular_file(file, error) && access(path.c_str(), W_OK) == 0);
}

// write_whole() writes `text` to `path` through a file beside it, renamed into place once
// complete, so that a failed export leaves no empty or partial file.
bool write_whole(const std::string& path, const std::string& text) {
  std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc | std::ios::binary);
    out << text;
    if (!out.flush()) {
      std::remove(partial.c_str());
      return false;
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    return false;
  }
  return true;
}

}  // namespace

int export_command(const ExportOptions& options) {
  if (options.pprof.empty() && options.folded.empty() && options.html.empty()) {
    return fail(kUsage, "export needs an output: --pprof OUT.pb.gz, --folded OUT or --html OUT.html");
  }
  report::AnalysisOptions analysis_options;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &analysis_options.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  analysis_options.fold = options.fold;
  std::vector<std::pair<const char*, std::string>> outputs;
  for (auto [name, path] : {std::pair{"--pprof", &options.pprof}, {"--folded", &options.folded}, {"--html", &options.html}}) {
    if (path->empty()) continue;
    for (const auto& [other, taken] : outputs) {
      if (std::filesystem::weakly_canonical(taken) == std::filesystem::weakly_canonical(*path)) {
        return fail(kUsage, fmt::format("{} and {} name one file: {}", other, name, *path));
      }
    }
    if (!writable(*path)) return fail(kOutputError, fmt::format("{}: cannot write '{}'", name, *path));
    outputs.emplace_back(name, *path);
  }
  try {
    std::unique_ptr<report::RunAnalysis> analysis = report::analyze_run(options.file, analysis_options);
    // Every output is made before any is written: an error leaves none half done.
    std::vector<std::pair<std::string, std::string>> made;
    if (!options.pprof.empty()) made.emplace_back(options.pprof, report::pprof_gzipped(*analysis));
    if (!options.folded.empty()) made.emplace_back(options.folded, report::folded_stacks(*analysis));
    if (!options.html.empty()) made.emplace_back(options.html, report::html_report(*analysis));
    for (const auto& [path, text] : made) {
      if (!write_whole(path, text)) return fail(kOutputError, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
