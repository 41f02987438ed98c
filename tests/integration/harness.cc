#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace leakscope::testing {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

int marker_line(const std::string& file, const std::string& name) {
  std::istringstream lines(read_file(fixture_source(file)));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find("# marker: " + name) != std::string::npos) return number;
  }
  ADD_FAILURE() << "no marker " << name << " in " << file;
  return 0;
}

std::vector<std::string> lines_wider_than(const std::string& text, size_t columns) {
  std::vector<std::string> wide;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t characters = 0;
    for (unsigned char c : line) characters += (c & 0xc0) != 0x80;
    if (characters > columns) wide.push_back(line);
    start = end + 1;
  }
  return wide;
}

namespace {

// peak_rss_kib() is the VmHWM in /proc/PID/status at `path`: the peak of the program that PID now
// runs (its address space since exec); 0 once it is gone.
long peak_rss_kib(const std::string& path) {
  std::ifstream status(path);
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

}  // namespace

Outcome run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int timeout_s) {
  std::string directory = scratch_dir();
  std::string out_path = directory + "/stdout", err_path = directory + "/stderr";
  // Closed by the child's exec: from then on /proc/PID/status is the program's, not the fork's copy.
  int execed[2];
  if (pipe2(execed, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe2 failed";
  pid_t child = fork();
  if (child == 0) {
    close(execed[0]);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    for (const auto& [name, value] : env) {
      if (value.empty()) {
        unsetenv(name.c_str());
      } else {
        setenv(name.c_str(), value.c_str(), 1);
      }
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(126);
  }
  close(execed[1]);
  char ignored;
  while (read(execed[0], &ignored, 1) < 0 && errno == EINTR) {
  }
  close(execed[0]);
  Outcome outcome;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string status_path = "/proc/" + std::to_string(child) + "/status";
  while (waitpid(child, &status, WNOHANG) == 0) {
    outcome.max_rss_kib = std::max(outcome.max_rss_kib, peak_rss_kib(status_path));
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      ADD_FAILURE() << argv[0] << " did not finish within " << timeout_s << " s (deadlock?)";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  outcome.out = read_file(out_path);
  outcome.err = read_file(err_path);
  return outcome;
}

Outcome leakscope(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv{LEAKSCOPE_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, env);
}

std::string fixture(const std::string& name) { return std::string(LEAKSCOPE_FIXTURE_DIR) + "/" + name; }
std::string fixture_source(const std::string& name) { return std::string(LEAKSCOPE_FIXTURE_SOURCE_DIR) + "/" + name; }
std::string preload_library() { return LEAKSCOPE_PRELOAD; }

namespace {

std::filesystem::path process_scratch_root() {
  return std::filesystem::temp_directory_path() / ("leakscope-test-" + std::to_string(getpid()));
}

// A test process removes its scratch files when its tests passed (streams of the torch tests run
// to hundreds of megabytes, and a suite run would otherwise leave gigabytes behind); a failure's
// files stay where its messages point.
class ScratchFilesRemoval : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    std::error_code ignored;
    std::filesystem::remove_all(process_scratch_root(), ignored);
  }
};

[[maybe_unused]] const ::testing::Environment* const scratch_files_removal =
    ::testing::AddGlobalTestEnvironment(new ScratchFilesRemoval);

}  // namespace

std::string scratch_dir() {
  static int counter = 0;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = test != nullptr ? std::string(test->test_suite_name()) + "." + test->name() : "global";
  std::filesystem::path path = process_scratch_root() / (name + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path);
  return path.string();
}

std::string steady_leak_stream() {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("steady_leak_ci"), "250"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return file;
}

nlohmann::json dump(const std::string& file, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"dump", "--format", "json", file};
  args.insert(args.end(), extra.begin(), extra.end());
  Outcome outcome = leakscope(args);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  if (outcome.exit_code != 0) return nlohmann::json::object({{"sites", nlohmann::json::array()}});
  return nlohmann::json::parse(outcome.out);
}

std::vector<nlohmann::json> sites_at(const nlohmann::json& document, const std::string& function) {
  std::vector<nlohmann::json> found;
  for (const auto& site : document["sites"]) {
    if (site["frames"].empty() || !site["frames"][0]["function"].is_string()) continue;
    if (site["frames"][0]["function"].get<std::string>() == function) found.push_back(site);
  }
  return found;
}

nlohmann::json site_at(const nlohmann::json& document, const std::string& function) {
  std::vector<nlohmann::json> found = sites_at(document, function);
  EXPECT_EQ(found.size(), 1u) << "sites at " << function << " in " << document.dump(1).substr(0, 4000);
  return found.empty() ? nlohmann::json::object({{"live_bytes", -1}, {"live_blocks", -1}}) : found[0];
}

std::vector<std::string> files_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace leakscope::testing
