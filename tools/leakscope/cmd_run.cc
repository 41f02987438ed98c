// leakscope run: start a command under the preload and pass its exit status through.
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "cli.h"
#include "core/options.h"

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
  for (const std::string& extra : options.extra_options) parts.push_back(extra);
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : ",") + part;
  return joined;
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

// related_streams() tells of the other streams of this run (written since `started`): those of
// child processes (FILE.PID) and, when the command exec'd (a wrapper script, env, a launcher), the
// one its pid wrote last as the program it became (FILE.PID.N), which is the stream to report on.
std::string related_streams(const std::string& written, pid_t child, std::filesystem::file_time_type started) {
  std::filesystem::path path(written);
  std::filesystem::path directory = path.has_parent_path() ? path.parent_path() : ".";
  std::string prefix = path.filename().string() + ".";
  std::string own_prefix = prefix + std::to_string(child);
  size_t others = 0;
  std::string last_image;
  int last_generation = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.last_write_time(error) < started) continue;
    ++others;
    if (name == own_prefix) {
      if (last_generation < 1) last_image = entry.path().string(), last_generation = 1;
    } else if (name.rfind(own_prefix + ".", 0) == 0) {
      int generation = std::atoi(name.c_str() + own_prefix.size() + 1);
      if (generation > last_generation) last_image = entry.path().string(), last_generation = generation;
    }
  }
  if (others == 0) return "";
  std::string text = fmt::format(" and {} more stream{} ({}*)", others, others == 1 ? "" : "s", (directory / prefix).string());
  if (!last_image.empty()) text += fmt::format("; the command exec'd: the program it became wrote {}", last_image);
  return text;
}

}  // namespace

int run_command(const RunOptions& options) {
  std::string preload = preload_path();
  if (preload.empty()) return fail(kCannotLaunch, "cannot find libleakscope.so next to the leakscope executable");

  std::string runtime_options = join_options(options);
  internal::Options parsed;
  internal::options_set_defaults(&parsed);
  char error[512];
  if (!internal::options_parse(runtime_options.c_str(), &parsed, error, sizeof(error))) return fail(kUsage, error);

  std::filesystem::path directory = std::filesystem::path(options.output).parent_path();
  if (directory.empty()) directory = ".";
  if (access(directory.c_str(), W_OK) != 0) {
    return fail(kOutputError, fmt::format("cannot write to '{}': {}", directory.string(), std::strerror(errno)));
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
    std::vector<char*> argv;
    for (const std::string& argument : options.command) argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::string message = fmt::format("leakscope: error: cannot run '{}': {}\n", options.command[0], std::strerror(errno));
    (void)!write(2, message.data(), message.size());
    _exit(kCannotLaunch);
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
  if (options.output.find("%e") == std::string::npos) {
    std::string written = resolved_output(options.output, child);
    if (access(written.c_str(), F_OK) == 0) fmt::print(stderr, "leakscope: wrote {}{}\n", written, related_streams(written, child, started));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kCannotLaunch;
}

}  // namespace leakscope::cli
