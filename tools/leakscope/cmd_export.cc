// leakscope export: the judged run in the formats other tools read (pprof, folded stacks,
// Prometheus metrics), and as one HTML page.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
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

// An output written beside its path and renamed into place once every output is complete, so
// that a failed export leaves no empty or partial file. Each is written as it is made: an export
// of a million sites never holds its whole text.
class PartialFile {
 public:
  explicit PartialFile(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {}
  ~PartialFile() {
    if (!placed_) std::remove(partial_.c_str());
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  // write() makes the file with `make`; false when it could not be written whole.
  template <typename Make>
  bool write(Make make) {
    std::ofstream out(partial_, std::ios::trunc | std::ios::binary);
    if (!out) return false;
    make(out);
    return static_cast<bool>(out.flush());
  }

  bool place() {
    placed_ = std::rename(partial_.c_str(), path_.c_str()) == 0;
    return placed_;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string partial_;
  bool placed_ = false;
};

}  // namespace

int export_command(const ExportOptions& options) {
  if (options.pprof.empty() && options.folded.empty() && options.html.empty() && options.prometheus.empty()) {
    return fail(kUsage, "export needs an output: --pprof OUT.pb.gz, --folded OUT, --html OUT.html or --prometheus OUT.prom");
  }
  report::MetricsOptions metrics;
  if (int code = parse_metric_labels(options.labels, options.top, &metrics); code != kOk) return code;
  report::AnalysisOptions analysis_options;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &analysis_options.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  analysis_options.fold = options.fold;
  std::vector<std::pair<const char*, std::string>> outputs;
  for (auto [name, path] : {std::pair{"--pprof", &options.pprof}, {"--folded", &options.folded}, {"--html", &options.html},
                            {"--prometheus", &options.prometheus}}) {
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
    // Every output is made before any is put in place: an error leaves none half done.
    std::vector<std::unique_ptr<PartialFile>> made;
    auto make = [&](const std::string& path, auto write) {
      made.push_back(std::make_unique<PartialFile>(path));
      return made.back()->write(write);
    };
    bool written = (options.pprof.empty() || make(options.pprof, [&](std::ostream& out) { report::write_pprof_gzipped(*analysis, out); })) &&
                   (options.folded.empty() || make(options.folded, [&](std::ostream& out) { report::write_folded_stacks(*analysis, out); })) &&
                   (options.html.empty() || make(options.html, [&](std::ostream& out) { report::write_html_report(*analysis, out); })) &&
                   (options.prometheus.empty() ||
                    make(options.prometheus, [&](std::ostream& out) { out << report::prometheus_metrics(*analysis, metrics); }));
    if (!written) return fail(kOutputError, fmt::format("cannot write '{}': {}", made.back()->path(), std::strerror(errno)));
    for (const auto& file : made) {
      if (!file->place()) return fail(kOutputError, fmt::format("cannot write '{}': {}", file->path(), std::strerror(errno)));
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
