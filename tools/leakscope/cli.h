// File: cli.h
//
// The leakscope CLI's verbs and shared pieces. Every error is one line on stderr,
// "leakscope: error: ...", and an exit code from exit_codes.inc.
#ifndef LEAKSCOPE_TOOLS_CLI_H_
#define LEAKSCOPE_TOOLS_CLI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/leak_gate.h"
#include "report/prometheus_format.h"
#include "report/suppressions.h"

namespace leakscope::cli {

enum ExitCode : int {
#define LS_EXIT_CODE(name, code, meaning) name = code,
#include "exit_codes.inc"
#undef LS_EXIT_CODE
};

// fail() prints "leakscope: error: <message>" and returns `code`.
int fail(ExitCode code, const std::string& message);

struct RunOptions {
  std::string output = "leakscope.%p.lsc";
  std::string interval;  // empty: the runtime's default
  int depth = 0;         // 0: the runtime's default
  std::string sample;    // empty: the runtime's default (exact)
  bool no_follow_fork = false;
  bool no_follow_exec = false;
  bool leak_check = false;                 // --leak-check: scan for lost blocks at the teardown mark
  bool cuda = false;                       // --cuda: device memory through CUPTI
  bool nvtx = false;                       // --nvtx: NVTX ranges as tasks
  std::vector<std::string> extra_options;  // raw name=value pairs
  std::string check;                       // --check: the gate's limits, "max-leaked=1MiB,..."
  std::string prometheus;                  // --prometheus HOST:PORT, served while the command runs
  bool listen_remote = false;
  std::vector<std::string> labels;         // --label NAME=VALUE on every series
  size_t top = 20;
  std::string linger = "15s";              // --prometheus-linger: the final metrics served until scraped, at most this
  bool gate = false;                       // --check was given (an empty one gates with the defaults)
  std::vector<std::string> command;
};

// run_command() runs `options.command` under the preload; returns its exit status.
int run_command(const RunOptions& options);

struct DumpOptions {
  std::string file;
  std::string at;  // --at: "N", "end", or empty for the last snapshot before teardown
  std::string format = "text";
  int frames = 8;
  size_t top = 0;         // 0: every site
  int64_t min_bytes = 0;  // sites with fewer live bytes are left out
  std::string task;       // only the sites holding bytes of this task
  uint64_t site_memory = 32ull << 20;  // for the sites read at once (report/dump_passes.h); 0: no limit
};

int dump_command(const DumpOptions& options);

struct ReportCommandOptions {
  std::string file;
  std::string at;
  std::string format = "text";
  size_t top = 10;
  int64_t min_bytes = 0;
  int frames = 0;
  std::string fold;
  uint64_t site_memory = 256ull << 20;  // text: for the sites read at once (report/report_passes.h); 0: no limit
};

int report_command(const ReportCommandOptions& options);

struct DiffOptions {
  std::string before;
  std::string after;
  std::string at;  // applies to both runs
  std::string format = "text";
  size_t top = 20;
};

int diff_command(const DiffOptions& options);

// The gate's limits and inputs as given (check's options, or run --check's "name=value,...").
struct CheckOptions {
  std::string file;
  std::string at;
  std::string fold;
  std::string max_leaked, max_leak_rate, max_rss, max_lost;
  std::string baseline, max_growth;
  std::vector<std::string> suppress;
  std::string junit;
  bool no_runtime_suppressions = false;
  std::string site_memory = "256MiB";  // as report's --site-memory
};

// parse_check_spec() reads run --check's "max-leaked=1MiB,max-leak-rate=100KiB/min,max-lost=0,..." into
// `options`; false with a one-line `error`.
bool parse_check_spec(const std::string& spec, CheckOptions* options, std::string* error);

// The gate ready to run: limits parsed, suppression and baseline files read, the JUnit path
// checked.
struct PreparedCheck {
  report::GateLimits limits;
  report::AnalysisOptions analysis;
  report::Suppressions suppressions;
  std::optional<report::Baseline> baseline;
  bool runtime_residue = true;
  std::string junit;
};

// prepare_check() validates `options` into `prepared`; kOk, or the exit code of the error it
// printed.
int prepare_check(const CheckOptions& options, PreparedCheck* prepared);

// run_check() judges each stream of `files` and prints its gate; kOk when every one passes,
// kLimitExceeded, or an error code. A stream that was not leak-checked cannot be held to max-lost:
// an error, unless `of_a_run` (the streams a `run --check` left, its command's first), where a
// process that ends by _exit, a signal or exec never reaches the teardown mark its scan runs at (a
// gtest death test's child): a note says so and its other limits are judged. There, too, a child's
// stream without a snapshot (killed before its first) is skipped with a note.
int run_check(const PreparedCheck& prepared, const std::vector<std::string>& files, bool of_a_run = false);

int check_command(const CheckOptions& options);

struct ExportOptions {
  std::string file;
  std::string at;
  std::string fold;
  std::string pprof;   // --pprof OUT.pb.gz
  std::string folded;  // --folded OUT
  std::string html;    // --html OUT.html
  std::string prometheus;           // --prometheus OUT.prom
  std::vector<std::string> labels;  // --label NAME=VALUE on every series
  size_t top = 20;                  // --metrics-top
};

int export_command(const ExportOptions& options);

struct ServeOptions {
  std::string file;
  std::string prometheus;  // HOST:PORT
  bool listen_remote = false;
  std::vector<std::string> labels;
  size_t top = 20;
};

int serve_command(const ServeOptions& options);

struct MetricsServerOptions;

// parse_metric_labels() validates `labels` (NAME=VALUE each) into `options`, with `top`; kOk, or the
// exit code of the error it printed.
int parse_metric_labels(const std::vector<std::string>& labels, size_t top, report::MetricsOptions* options);

// prepare_metrics() validates the address and labels into `options`; kOk, or the exit code of the
// error it printed.
int prepare_metrics(const std::string& address, bool listen_remote, const std::vector<std::string>& labels, size_t top,
                    MetricsServerOptions* options);

// preload_path() finds libleakscope.so next to this executable (build tree or install); empty
// when it is not there.
std::string preload_path();

}  // namespace leakscope::cli

#endif  // LEAKSCOPE_TOOLS_CLI_H_
