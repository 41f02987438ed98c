// leakscope run: start a command under the preload and pass its exit status through.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli.h"
#include "metrics_server.h"
#include "core/options.h"
#include "core/stream_format.h"
#include "report/run_state.h"
#include "report/stream_reader.h"

namespace leakscope::cli {
namespace {

pid_t g_child = 0;

void forward_signal(int signal_number) {
  if (g_child > 0) kill(g_child, signal_number);
}

std::string join_options(const RunOptions& options) {
  std::vector<std::string> parts;
  if (const char* inherited = getenv("LEAKSCOPE_OPTIONS"); inherited != nullptr && *inherited != '\0') {
    parts.emplace_back(inherited);
  }
  parts.push_back("output=" + options.output);
  if (!options.interval.empty()) parts.push_back("interval=" + options.interval);
  if (options.depth != 0) parts.push_back(fmt::format("depth={}", options.depth));
  if (!options.sample.empty()) parts.push_back("sample=" + options.sample);
  if (options.no_follow_fork) parts.emplace_back("follow_fork=0");
  if (options.no_follow_exec) parts.emplace_back("follow_exec=0");
  if (options.leak_check) parts.emplace_back("leak_check=1");
  if (options.cuda) parts.emplace_back("cuda=1");
  if (options.nvtx) parts.emplace_back("nvtx=1");
  for (const std::string& extra : options.extra_options) parts.push_back(extra);
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : ",") + part;
  return joined;
}

// sets_option() tells whether the runtime options `text` ("name=value,...") set `name`.
bool sets_option(const std::string& text, const std::string& name) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, name.size() + 1, name + "=") == 0) return true;
    at = end + 1;
  }
  return false;
}

std::string resolved_output(const std::string& pattern, pid_t pid) {
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      path += std::to_string(pid);
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == '%') {
      path += '%';
      ++i;
    } else {
      path += pattern[i];
    }
  }
  return path;
}

// related_streams() tells of the other streams of this run (written since `started`, named after
// `expected`, other than `written`): those of child processes (FILE.PID) and, when the command
// exec'd (a wrapper script, env, a launcher), the one its pid wrote last as the program it became
// (FILE.PID.N), which is the stream to report on. *finals gets the stream each process ended
// with: the program the command became (or `written`), then each child's last image.
std::string related_streams(const std::string& expected, const std::string& written, pid_t child,
                            std::filesystem::file_time_type started, std::vector<std::string>* finals) {
  std::filesystem::path path(expected);
  std::filesystem::path directory = path.has_parent_path() ? path.parent_path() : ".";
  std::string prefix = path.filename().string() + ".";
  size_t others = 0;
  std::map<long, std::pair<int, std::string>> last_by_pid;  // pid -> (image generation, stream)
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().string() == written || entry.last_write_time(error) < started) continue;
    ++others;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (end == name.c_str() + prefix.size() || pid <= 0 || (*end != '\0' && *end != '.')) continue;
    int generation = *end == '.' ? std::atoi(end + 1) : 1;
    auto& last = last_by_pid[pid];
    if (generation > last.first) last = {generation, entry.path().string()};
  }
  auto own = last_by_pid.find(child);
  std::string became = own == last_by_pid.end() ? "" : own->second.second;
  finals->push_back(became.empty() ? written : became);
  for (const auto& [pid, last] : last_by_pid) {
    if (pid != child) finals->push_back(last.second);
  }
  if (others == 0) return "";
  std::string text = fmt::format(" and {} more stream{} ({}*)", others, others == 1 ? "" : "s", (directory / prefix).string());
  if (!became.empty()) text += fmt::format("; the command exec'd: the program it became wrote {}", became);
  return text;
}

// say_if_exit_unseen() notes a program that exited while its stream ends without a final
// snapshot: it left by its own exit system call, past every library (a Go program's os.Exit), so
// what it did after its last snapshot is not in the stream, and reports say it was killed.
void say_if_exit_unseen(const std::string& stream, int exit_status) {
  std::vector<report::SnapshotMark> marks;
  try {
    report::StreamReader reader(stream);
    marks = reader.skim_snapshots();
  } catch (const report::StreamError&) {
    return;  // what the stream lacks is said when it is read
  }
  if (marks.empty() || marks.back().final || marks.back().reason == internal::SnapshotReason::kExec) return;
  fmt::print(stderr,
             "leakscope: note: the program exited (status {}) without leakscope seeing its exit: it left by its own "
             "exit system call, as Go programs do, so {} ends at its last snapshot, at {:.1f} s, and reads as killed\n",
             exit_status, stream, static_cast<double>(marks.back().time_ns) / 1e9);
}

// remove_stale_stream() removes a stream that an earlier run left at `path`, as a user expects of
// -o: only a regular file of this user's, not a symlink, that holds a leakscope stream and that
// no live process is writing (the runtime locks its stream for its life). Anything else is left
// alone, and the runtime then writes PATH.2 (which run names at the end).
void remove_stale_stream(const std::string& path) {
  struct stat status;
  if (lstat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode) || status.st_uid != geteuid()) return;
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  unsigned char magic[sizeof(internal::kFileMagic)];
  bool stream = read(fd, magic, sizeof(magic)) == static_cast<ssize_t>(sizeof(magic)) &&
                std::memcmp(magic, internal::kFileMagic, sizeof(magic)) == 0;
  bool idle = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  if (stream && idle) unlink(path.c_str());
}

// stream_of() is the file the traced root process wrote: `expected`, or the first of
// `expected.2`, `expected.3`... (the runtime's choice when the name was taken) whose process
// frame names `pid`; empty when there is none.
std::string stream_of(const std::string& expected, pid_t pid) {
  for (int attempt = 1; attempt < 1000; ++attempt) {
    std::string candidate = attempt == 1 ? expected : fmt::format("{}.{}", expected, attempt);
    if (access(candidate.c_str(), F_OK) != 0) {
      if (attempt > 1) break;
      continue;
    }
    try {
      report::StreamReader reader(candidate);
      report::Frame frame;
      report::RunState state;
      if (reader.next(&frame) && frame.type == internal::FrameType::kProcess) {
        state.apply(frame, reader);
        if (state.process().pid == pid) return candidate;
      }
    } catch (const report::StreamError&) {
    }
  }
  return "";
}

// command_path() is where execvp would find `command`: itself when it names a path, else the
// first executable of that name on PATH; empty when there is none.
std::string command_path(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = getenv("PATH");
  std::string directories = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= directories.size();) {
    size_t end = directories.find(':', at);
    if (end == std::string::npos) end = directories.size();
    std::string candidate = (end > at ? directories.substr(at, end - at) : std::string(".")) + "/" + command;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return "";
}

// file_creation_error() is why a file cannot be made in `directory` (an errno), or 0. It makes
// one and removes it: access() says yes to root where nothing can be made (/sys, /proc).
int file_creation_error(const std::filesystem::path& directory) {
  std::string probe = (directory / ".leakscope-probe-XXXXXX").string();
  int descriptor = mkstemp(probe.data());
  if (descriptor < 0) return errno;
  close(descriptor);
  unlink(probe.c_str());
  return 0;
}

// is_static_executable() tells an ELF executable without a program interpreter (PT_INTERP):
// nothing loads a preload into it. Scripts and unreadable files are not judged.
bool is_static_executable(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  Elf64_Ehdr header;
  if (!file.read(reinterpret_cast<char*>(&header), sizeof(header)) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || (header.e_type != ET_EXEC && header.e_type != ET_DYN)) {
    return false;
  }
  std::string name = std::filesystem::path(path).filename().string();
  if (name.rfind("ld-linux", 0) == 0 || name.rfind("ld.so", 0) == 0) return false;  // the loader run as a program
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    file.seekg(static_cast<std::streamoff>(header.e_phoff + static_cast<uint64_t>(i) * header.e_phentsize));
    if (!file.read(reinterpret_cast<char*>(&segment), sizeof(segment))) return false;
    if (segment.p_type == PT_INTERP) return false;
  }
  return true;
}

// can_listen() tells whether `address` can be bound now (a socket bound and closed at once).
bool can_listen(const ListenAddress& address, std::string* error) {
  struct addrinfo hints {};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  struct addrinfo* found = nullptr;
  std::string port = std::to_string(address.port);
  if (getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    *error = fmt::format("--prometheus: cannot resolve '{}'", address.host);
    return false;
  }
  int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  int yes = 1;
  bool bound = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes)) == 0 &&
               ::bind(fd, found->ai_addr, found->ai_addrlen) == 0;
  int reason = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!bound) *error = fmt::format("cannot listen on {}:{}: {}", address.host, address.port, std::strerror(reason));
  return bound;
}

}  // namespace

int run_command(const RunOptions& options) {
  std::string preload = preload_path();
  if (preload.empty()) return fail(kCannotLaunch, "cannot find libleakscope.so next to the leakscope executable");

  PreparedCheck gate;
  if (options.gate) {
    CheckOptions check;
    std::string error;
    if (!parse_check_spec(options.check, &check, &error)) return fail(kUsage, error);
    if (options.output.find("%e") != std::string::npos) {
      return fail(kUsage, "--check needs to know the stream's name: -o without %e");
    }
    if (int code = prepare_check(check, &gate); code != kOk) return code;
  }

  MetricsServerOptions metrics;
  uint64_t linger_ns = 0;
  if (!internal::parse_duration_ns(options.linger.data(), options.linger.size(), &linger_ns)) {
    return fail(kUsage, fmt::format("--prometheus-linger: '{}' is not a duration (15s, 500ms, 0)", options.linger));
  }
  if (!options.prometheus.empty()) {
    if (int code = prepare_metrics(options.prometheus, options.listen_remote, options.labels, options.top, &metrics);
        code != kOk) {
      return code;
    }
    if (options.output.find("%e") != std::string::npos) {
      return fail(kUsage, "--prometheus needs to know the stream's name: -o without %e");
    }
    // The server's socket is made after fork, so that the command does not inherit it: tried here.
    std::string error;
    if (!can_listen(metrics.address, &error)) return fail(kCannotListen, error);
  }

  std::string runtime_options = join_options(options);
  internal::Options parsed;
  internal::options_set_defaults(&parsed);
  char error[512];
  if (!internal::options_parse(runtime_options.c_str(), &parsed, error, sizeof(error))) {
    std::string reason = error;
    const std::string variable = "LEAKSCOPE_OPTIONS: ";
    if (reason.rfind(variable, 0) == 0) reason = "run options: " + reason.substr(variable.size());
    return fail(kUsage, reason);
  }
  // A gated run is leak-checked, so that the gate holds its lost blocks too, unless the options
  // decide it themselves or sample: the scan needs every block recorded.
  if (options.gate && !sets_option(runtime_options, "leak_check") && parsed.sample == 0) {
    runtime_options += ",leak_check=1";
    parsed.leak_check = true;
  }
  if (options.leak_check && parsed.sample != 0) return fail(kUsage, "--leak-check needs exact mode: drop --sample");
  if (gate.limits.max_lost_bytes && (parsed.sample != 0 || (!parsed.leak_check && parsed.leak_check_signal == 0))) {
    return fail(kUsage, "--check max-lost needs a leak-checked run: leak_check=1 in exact mode (no --sample)");
  }

  std::error_code ignored;
  if (std::filesystem::is_directory(options.output, ignored)) {
    return fail(kOutputError, fmt::format("'{}' is a directory; -o names the stream file, such as {}/run.lsc",
                                          options.output, options.output));
  }
  std::string executable = command_path(options.command[0]);
  if (!executable.empty() && is_static_executable(executable)) {
    return fail(kNotTraceable, fmt::format("{} is statically linked; LD_PRELOAD cannot trace it", options.command[0]));
  }

  if (options.output.find('%') == std::string::npos) remove_stale_stream(options.output);

  std::filesystem::path directory = std::filesystem::path(options.output).parent_path();
  if (directory.empty()) directory = ".";
  if (int error = file_creation_error(directory); error != 0) {
    return fail(kOutputError, fmt::format("cannot write to '{}': {}", directory.string(), std::strerror(error)));
  }

  std::string ld_preload = preload;
  if (const char* existing = getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0') {
    ld_preload += std::string(":") + existing;  // leakscope first, so the others sit below it
  }

  // Coarse file times can put a stream written just after this a tick before it.
  auto started = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(1);
  pid_t child = fork();
  if (child < 0) return fail(kCannotLaunch, fmt::format("fork: {}", std::strerror(errno)));
  if (child == 0) {
    setenv("LD_PRELOAD", ld_preload.c_str(), 1);
    setenv("LEAKSCOPE_OPTIONS", runtime_options.c_str(), 1);
    unsetenv("LEAKSCOPE_TRACED_ROOT");  // the command is the root of what gets traced
    // The injection variables are set before the program starts, not by the runtime as it starts:
    // a library's static initializer may initialize CUDA or make an NVTX call before leakscope's
    // own runs, and each reads its variable once. One naming another library is left (the runtime
    // says so), but libcupti as NVTX's injection, which would take CUPTI from leakscope.
    const char* cuda_injection = getenv("CUDA_INJECTION64_PATH");
    if (options.cuda && (cuda_injection == nullptr || *cuda_injection == '\0')) setenv("CUDA_INJECTION64_PATH", preload.c_str(), 1);
    const char* nvtx_injection = getenv("NVTX_INJECTION64_PATH");
    if (options.nvtx && (nvtx_injection == nullptr || *nvtx_injection == '\0' || strstr(nvtx_injection, "libcupti") != nullptr)) {
      setenv("NVTX_INJECTION64_PATH", preload.c_str(), 1);
    }
    // Tools inside the program that read their own stream (the pytest plugin) run this CLI.
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (length > 0) {
      self[length] = '\0';
      setenv("LEAKSCOPE_CLI", self, 1);
    }
    std::vector<char*> argv;
    for (const std::string& argument : options.command) argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::string message = fmt::format("leakscope: error: cannot run '{}': {}\n", options.command[0], std::strerror(errno));
    (void)!write(2, message.data(), message.size());
    _exit(kCannotLaunch);
  }

  std::unique_ptr<MetricsServer> server;
  std::thread serving;
  if (!options.prometheus.empty()) {
    std::string expected = resolved_output(options.output, child);
    auto found = std::make_shared<std::string>();
    server = std::make_unique<MetricsServer>(metrics, [expected, child, found] {
      if (found->empty()) *found = stream_of(expected, child);
      return *found;
    });
    std::string error;
    if (server->bind(&error)) {
      fmt::print(stderr, "leakscope: serving the metrics on http://{}:{}/metrics while the command runs\n",
                 metrics.address.host, metrics.address.port);
      serving = std::thread([&server] { server->serve(); });
    } else {
      fmt::print(stderr, "leakscope: warning: {}; the command runs without the metrics\n", error);
    }
  }

  // As a shell does: terminal signals reach the child directly, others are passed on.
  g_child = child;
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, forward_signal);
  signal(SIGHUP, forward_signal);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (serving.joinable()) {
    // The final snapshot is what a scrape should see last (the process no longer running, what a
    // leak check at exit lost): served until one scrape after the end has read it, or the linger.
    auto ended = std::chrono::steady_clock::now();
    if (linger_ns > 0) {
      fmt::print(stderr, "leakscope: the command ended; its final metrics are served until scraped once, at most {:.0f} s "
                 "(--prometheus-linger)\n", static_cast<double>(linger_ns) / 1e9);
      auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(linger_ns);
      while (!server->answered_since(ended) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    server->stop();
    serving.join();
  }
  std::vector<std::string> finals;  // the streams to gate: the root's (or what it exec'd into), its children's
  if (options.output.find("%e") == std::string::npos) {
    std::string expected = resolved_output(options.output, child);
    std::string written = stream_of(expected, child);
    if (!written.empty()) {
      fmt::print(stderr, "leakscope: wrote {}{}\n", written, related_streams(expected, written, child, started, &finals));
    }
  }
  int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : kCannotLaunch;
  if (WIFEXITED(status) && !finals.empty()) say_if_exit_unseen(finals.front(), WEXITSTATUS(status));
  if (!options.gate) return exit_status;
  if (finals.empty()) {
    return exit_status != 0 ? exit_status : fail(kBadInput, "--check: the command left no stream to check");
  }
  std::fflush(stderr);
  int gate_status = run_check(gate, finals, true);
  if (exit_status != 0) {
    fmt::print(stderr, "leakscope: the command failed with status {}, which run exits with (the gate {})\n", exit_status,
               gate_status == kOk ? "passed" : gate_status == kLimitExceeded ? "failed" : "could not judge");
    return exit_status;
  }
  return gate_status;
}

}  // namespace leakscope::cli
