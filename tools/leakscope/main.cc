// leakscope: run a program under the preload and read what it recorded. See docs/cli.md.
#include <alloca.h>
#include <error.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <string_view>

#include "cli.h"
#include "core/options.h"
#include "report/snapshot_choice.h"
#include "report/symbolizer.h"

namespace leakscope::cli {

int fail(ExitCode code, const std::string& message) {
  fmt::print(stderr, "leakscope: error: {}\n", message);
  return code;
}

namespace {

// grow_stack() makes the main thread's stack `bytes` deep now, while memory is there: the
// kernel grows a stack as it is touched and never shrinks it, and a growth refused later, under
// an address-space limit (ulimit -v) that the stream's tables have filled, is a SIGSEGV in
// whatever function needed it (libdw's line tables take tens of KiB of stack) instead of the one
// line an allocation that fails gives.
// Never more than half the stack's own limit (ulimit -s), which the growth would pass.
__attribute__((noinline)) void grow_stack(size_t bytes) {
  struct rlimit limit;
  if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) bytes = std::min<size_t>(bytes, limit.rlim_cur / 2);
  volatile char* depth = static_cast<volatile char*>(alloca(bytes));
  for (size_t offset = 0; offset < bytes; offset += 4096) depth[offset] = 0;
}

constexpr char kOutOfMemoryMessage[] = "out of memory: the stream holds more than this machine can read";

// say_out_of_memory() ends the program as fail() words a lack of memory, without allocating.
[[noreturn]] void say_out_of_memory() {
  for (std::string_view part : {std::string_view("leakscope: error: "), std::string_view(kOutOfMemoryMessage), std::string_view("\n")}) {
    if (write(STDERR_FILENO, part.data(), part.size()) < 0) break;
  }
  _exit(kOutOfMemory);
}

// Where an allocation of its own fails, libdw does not return an error: it reports it through
// glibc's error(), which prints the program's name through this hook, then its own words, and
// exits 1 (the only caller of error() in this program); or it fails an assertion, which aborts.
// Either is the machine's memory running out, and is said so, with its exit code.
void out_of_memory_in_library_error() { say_out_of_memory(); }

void abort_in_library(int) {
  if (leakscope::report::inside_debug_library()) say_out_of_memory();
  // Anything else aborts as it would have: abort() raises again with the default action.
}

// unexpected_arguments_text() names what the command line held that its verb does not take: an
// unknown option first, as that is most often the mistake (a misspelt option, whose value then
// takes the place of the file).
std::string unexpected_arguments_text(const CLI::App& app) {
  std::vector<std::string> extras = app.remaining(true);
  std::string verb = app.get_subcommands().empty() ? "leakscope" : "leakscope " + app.get_subcommands().front()->get_name();
  auto option = std::find_if(extras.begin(), extras.end(), [](const std::string& extra) { return extra.size() > 1 && extra[0] == '-'; });
  if (option != extras.end()) return fmt::format("unknown option '{}' ({} --help lists them)", *option, verb);
  if (extras.empty()) return fmt::format("unexpected arguments ({} --help lists what it takes)", verb);
  return fmt::format("unexpected argument '{}' ({} --help lists what it takes)", extras.front(), verb);
}

// stdout_error() is what went wrong writing the verb's answer to standard output (a full disk, a
// closed pipe), or an empty string: a CI step that redirects a report to a file must not pass when
// the file was not written.
std::string stdout_error() {
  errno = 0;
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return "";
  // A verb that flushed as it went met the error then, and errno no longer holds it.
  return std::string("standard output could not be written") + (errno != 0 ? std::string(": ") + std::strerror(errno) : "");
}

}  // namespace

}  // namespace leakscope::cli

int main(int argc, char** argv) {
  using namespace leakscope::cli;
  // Reading a stream makes and lets go of tables of a few hundred thousand entries (its triples,
  // once taken, give way to the sites' records): blocks from 256 KiB up are mapped and unmapped,
  // so that what is let go goes back to the system. glibc would otherwise raise this threshold
  // as such blocks are freed, up to 32 MiB, and keep what is freed below it.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  grow_stack(1 << 20);
  error_print_progname = out_of_memory_in_library_error;
  struct sigaction on_abort = {};
  on_abort.sa_handler = abort_in_library;
  on_abort.sa_flags = SA_RESETHAND;
  sigaction(SIGABRT, &on_abort, nullptr);
  // Everything after "--" is the command of `run`, passed untouched.
  std::vector<std::string> command;
  int own_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      own_argc = i;
      for (int j = i + 1; j < argc; ++j) command.emplace_back(argv[j]);
      break;
    }
  }

  static const char* const kVerbs[] = {"run", "dump", "report", "diff", "check", "export", "serve"};
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(std::begin(kVerbs), std::end(kVerbs), [&](const char* verb) { return std::strcmp(argv[1], verb) == 0; })) {
    return fail(kUsage, fmt::format("unknown verb '{}': use run, dump, report, diff, check, export or serve (--help lists them)", argv[1]));
  }

  CLI::App app{"leakscope: where a program's memory goes, and which code leaks it"};
  app.set_version_flag("--version", std::string("leakscope ") + LEAKSCOPE_VERSION);
  app.require_subcommand(1);

  RunOptions run;
  CLI::App* run_verb = app.add_subcommand("run", "Run COMMAND under leakscope: leakscope run [options] -- COMMAND ARGS...");
  run_verb->add_option("-o,--output", run.output, "Stream file; %p = pid, %e = executable name")->capture_default_str();
  run_verb->add_option("--interval", run.interval, "Time between snapshots, e.g. 500ms, 2s (default 1s)");
  run_verb->add_option("--depth", run.depth, "Frames kept per stack, 1..128 (default 64)")->check(CLI::Range(1, 128));
  run_verb->add_option("--sample", run.sample, "0 records every allocation (default); BYTES (e.g. 512KiB) samples one per BYTES allocated on average");
  run_verb->add_flag("--no-follow-fork", run.no_follow_fork, "Do not track forked children");
  run_verb->add_flag("--no-follow-exec", run.no_follow_exec, "Do not track programs the command execs");
  run_verb->add_flag("--leak-check", run.leak_check,
                     "Scan for blocks no pointer reaches at the teardown mark (leak_check=1; on under --check)");
  run_verb->add_flag("--cuda", run.cuda,
                     "Track CUDA device, pinned and managed memory through CUPTI (cuda=1); a program without CUDA is left as it is");
  run_verb->add_flag("--nvtx", run.nvtx, "Take each thread's innermost NVTX push/pop range as its task (nvtx=1)");
  // Repeatable options take one value each time: a file named after one is not taken as a second value.
  run_verb->add_option("--option", run.extra_options, "Any runtime option as name=value (see docs/options.md)")->allow_extra_args(false);
  auto non_empty = [](const std::string& value) { return value.empty() ? std::string("needs a value") : std::string(); };
  run_verb->add_option("--prometheus", run.prometheus, "Serve Prometheus metrics on HOST:PORT (loopback) while the command runs")
      ->check(non_empty);
  run_verb->add_flag("--listen-remote", run.listen_remote, "Let --prometheus listen on an address other machines reach");
  run_verb->add_option("--label", run.labels, "NAME=VALUE on every Prometheus series (a fleet told apart); repeatable")
      ->allow_extra_args(false);
  run_verb->add_option("--prometheus-linger", run.linger,
                       "After the command ends, serve its final metrics until one scrape has read them, at most this long "
                       "(default 15s; 0: stop at once)")
      ->check(non_empty);
  run_verb->add_option("--metrics-top", run.top, "Groups with Prometheus series of their own (default 20)")->check(CLI::Range(1, 10000));
  run_verb->add_option("--check", run.check,
                       "Gate the run when it ends, as check does: 'max-leaked=1MiB,max-leak-rate=100KiB/min,...' "
                       "(without a value: check's default limits)")
      ->expected(0, 1);

  DumpOptions dump;
  CLI::App* dump_verb = app.add_subcommand("dump", "Print the state at the last (or N-th) snapshot of FILE");
  dump_verb->add_option("file", dump.file, "A .lsc stream")->required();
  const char* at_help = "Snapshot to show and judge: N (from 1) or 'end' (default: the last before teardown)";
  dump_verb->add_option("--at", dump.at, at_help);
  dump_verb->add_option("--frames", dump.frames, "Frames shown per site in text")->check(CLI::Range(1, 1000))->capture_default_str();
  dump_verb->add_option("--format", dump.format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  dump_verb->add_option("--top", dump.top, "Only the N sites with the most live bytes (default: every site)")->check(CLI::Range(1, 100000000));
  dump_verb->add_option("--task", dump.task, "Only the sites holding live bytes of this task");
  std::string dump_min_bytes = "0";
  dump_verb->add_option("--min-bytes", dump_min_bytes, "Leave out sites with fewer live bytes (e.g. 64KiB)")->capture_default_str();
  std::string dump_site_memory = "32MiB";
  dump_verb->add_option("--site-memory", dump_site_memory,
                        "With --top: memory for the sites read at once, about 400 bytes each; a stream with more is read "
                        "in several passes (0: one pass, whatever it takes)")->capture_default_str();

  ReportCommandOptions report;
  std::string min_bytes = "0";
  CLI::App* report_verb = app.add_subcommand("report", "Leak suspects with verdicts, caches, startup residents, memory over time");
  report_verb->add_option("file", report.file, "A .lsc stream")->required();
  report_verb->add_option("--format", report.format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  report_verb->add_option("--top", report.top, "Groups shown per section")->check(CLI::Range(1, 1000000))->capture_default_str();
  report_verb->add_option("--min-bytes", min_bytes, "Leave out sites with fewer live bytes (e.g. 64KiB)")->capture_default_str();
  report_verb->add_option("--at", report.at, at_help);
  report_verb->add_option("--frames", report.frames, "Frames shown per stack in text (default: 6 for leaks, 1 for others)")->check(CLI::Range(1, 1000));
  report_verb->add_option("--fold", report.fold, "Fold framework frames: torch, python, or any module name, comma-separated");
  std::string report_site_memory = "256MiB";
  report_verb->add_option("--site-memory", report_site_memory,
                          "Memory for the sites held at once, about 512 bytes each, besides the modules' debug "
                          "information; a stream with more is read in parts (32 at most), each holding whole groups, and "
                          "prints the same (0: read at once; a leak-checked stream is always read at once)")
      ->capture_default_str();

  DiffOptions diff;
  CLI::App* diff_verb = app.add_subcommand("diff", "What changed between two runs, per site");
  diff_verb->add_option("before", diff.before, "The earlier .lsc stream")->required();
  diff_verb->add_option("after", diff.after, "The later .lsc stream")->required();
  diff_verb->add_option("--at", diff.at, at_help);
  diff_verb->add_option("--format", diff.format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  diff_verb->add_option("--top", diff.top, "Sites shown")->check(CLI::Range(1, 1000000))->capture_default_str();

  CheckOptions check;
  CLI::App* check_verb = app.add_subcommand("check", "CI gate: exit 1 when the run's leaks, leak rate, RSS or lost blocks exceed their limits");
  check_verb->add_option("file", check.file, "A .lsc stream")->required();
  check_verb->add_option("--max-leaked", check.max_leaked, "Bytes in leak verdicts allowed (default 0 when no limit is given), e.g. 1MiB")
      ->check(non_empty);
  check_verb->add_option("--max-leak-rate", check.max_leak_rate, "Growth of the leaks allowed, e.g. 100KiB/min, 1MiB/s, 64MiB/h")
      ->check(non_empty);
  check_verb->add_option("--max-rss", check.max_rss, "Peak RSS allowed, less leakscope's own memory, e.g. 2GiB")->check(non_empty);
  check_verb->add_option("--max-lost", check.max_lost,
                         "Bytes lost at the leak check allowed, directly and indirectly (default 0 in a leak-checked run "
                         "when no limit is given)")
      ->check(non_empty);
  check_verb->add_option("--baseline", check.baseline, "An earlier report --format json to compare each leak with")->check(non_empty);
  check_verb->add_option("--max-growth", check.max_growth, "Growth of a leak over the baseline allowed, in percent")->check(non_empty);
  check_verb->add_option("--suppress", check.suppress, "A suppressions file (function:GLOB, file:GLOB, module:GLOB, leak:GLOB); repeatable")
      ->check(non_empty)
      ->allow_extra_args(false);
  check_verb->add_flag("--no-runtime-suppressions", check.no_runtime_suppressions,
                       "Gate the runtime's own residue too (the loader's, stdio buffers, libstdc++'s pool)");
  check_verb->add_option("--junit", check.junit, "Also write the checks as JUnit XML to this file")->check(non_empty);
  check_verb->add_option("--at", check.at, at_help);
  check_verb->add_option("--fold", check.fold, "Fold framework frames, as report does");
  check_verb->add_option("--site-memory", check.site_memory,
                         "Memory for the sites held at once, as report's; a stream with more is read in parts, each "
                         "holding whole groups, keeping every leak group (0: read at once; a leak-checked stream is "
                         "always read at once)")->capture_default_str();

  ExportOptions exported;
  CLI::App* export_verb =
      app.add_subcommand("export", "The judged run as a pprof profile, folded stacks, an HTML page or Prometheus metrics");
  export_verb->add_option("file", exported.file, "A .lsc stream")->required();
  export_verb->add_option("--pprof", exported.pprof, "Write a gzipped pprof profile (go tool pprof, Pyroscope, Grafana)");
  export_verb->add_option("--folded", exported.folded, "Write folded stacks of live bytes (flamegraph.pl, speedscope)");
  export_verb->add_option("--html", exported.html, "Write one self-contained HTML page: flame graph, memory over time, verdicts");
  export_verb->add_option("--prometheus", exported.prometheus,
                          "Write the Prometheus metrics of the judged run as text (node_exporter's textfile collector, Pushgateway)");
  export_verb->add_option("--label", exported.labels, "With --prometheus: NAME=VALUE on every series; repeatable")->allow_extra_args(false);
  export_verb->add_option("--metrics-top", exported.top, "With --prometheus: groups with series of their own (default 20)")
      ->check(CLI::Range(1, 10000));
  export_verb->add_option("--at", exported.at, at_help);
  export_verb->add_option("--fold", exported.fold, "Fold framework frames when grouping, as report does");

  ServeOptions serve;
  CLI::App* serve_verb = app.add_subcommand("serve", "Serve Prometheus metrics for a stream a traced process is writing");
  serve_verb->add_option("file", serve.file, "A .lsc stream")->required();
  serve_verb->add_option("--prometheus", serve.prometheus, "HOST:PORT to serve /metrics on (loopback unless --listen-remote)")
      ->required()
      ->check(non_empty);
  serve_verb->add_flag("--listen-remote", serve.listen_remote, "Listen on an address other machines reach");
  serve_verb->add_option("--label", serve.labels, "NAME=VALUE on every series; repeatable")->allow_extra_args(false);
  serve_verb->add_option("--top", serve.top, "Groups with series of their own (default 20)")->check(CLI::Range(1, 10000));

  try {
    app.parse(own_argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ExtrasError&) {
    return fail(kUsage, unexpected_arguments_text(app));
  } catch (const CLI::ParseError& error) {
    return fail(kUsage, error.what());
  }

  // A stream too large for this machine ends in one line, not an abort.
  auto dispatch = [&]() -> int {
    if (run_verb->parsed()) {
      if (command.empty()) return fail(kUsage, "run needs a command: leakscope run [options] -- COMMAND ARGS...");
      run.command = command;
      run.gate = run_verb->count("--check") != 0;
      return run_command(run);
    }
    if (!command.empty()) return fail(kUsage, "unexpected '--' (only run takes a command)");
    if (report_verb->parsed()) {
      uint64_t bytes = 0;
      if (!leakscope::internal::parse_size_bytes(min_bytes.data(), min_bytes.size(), &bytes)) {
        return fail(kUsage, "--min-bytes: not a size: " + min_bytes);
      }
      report.min_bytes = static_cast<int64_t>(bytes);
      if (!leakscope::internal::parse_size_bytes(report_site_memory.data(), report_site_memory.size(), &report.site_memory)) {
        return fail(kUsage, "--site-memory: not a size: " + report_site_memory);
      }
      return report_command(report);
    }
    if (diff_verb->parsed()) return diff_command(diff);
    if (check_verb->parsed()) return check_command(check);
    if (export_verb->parsed()) return export_command(exported);
    if (serve_verb->parsed()) return serve_command(serve);
    uint64_t dump_bytes = 0;
    if (!leakscope::internal::parse_size_bytes(dump_min_bytes.data(), dump_min_bytes.size(), &dump_bytes)) {
      return fail(kUsage, "--min-bytes: not a size: " + dump_min_bytes);
    }
    dump.min_bytes = static_cast<int64_t>(dump_bytes);
    if (!leakscope::internal::parse_size_bytes(dump_site_memory.data(), dump_site_memory.size(), &dump.site_memory)) {
      return fail(kUsage, "--site-memory: not a size: " + dump_site_memory);
    }
    return dump_command(dump);
  };
  try {
    int code = dispatch();
    // run's own status is the command's; what it prints beside the command's output is a note.
    if (run_verb->parsed()) return code;
    std::string unwritten = stdout_error();
    return unwritten.empty() ? code : fail(kOutputError, unwritten);
  } catch (const std::bad_alloc&) {
    return fail(kOutOfMemory, kOutOfMemoryMessage);
  } catch (const leakscope::report::SnapshotChoiceError& error) {
    return fail(kUsage, error.what());
  }
}
