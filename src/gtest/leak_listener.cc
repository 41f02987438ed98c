// The GoogleTest listener of leakscope/gtest.h: live bytes before and after each test, through the
// C API (a no-op without the preload).
#include "leakscope/gtest.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "leakscope/leakscope.h"

namespace leakscope {
namespace {

constexpr int64_t kNoLimit = -1;
constexpr int kWarmThreads = 8;  // threads a test may run at once without paying the runtime's share
std::atomic<int64_t> g_test_limit{kNoLimit};  // set by LEAKSCOPE_ALLOW_LEAKED for the running test

// host_live_bytes() is what a test can leave behind: heap blocks, mappings and CPU tensors.
int64_t host_live_bytes() {
  return leakscope_live_bytes(LEAKSCOPE_DOMAIN_HEAP) + leakscope_live_bytes(LEAKSCOPE_DOMAIN_MMAP) +
         leakscope_live_bytes(LEAKSCOPE_DOMAIN_C10_CPU);
}

// parse_size() reads 512, 64K, 64KiB, 1MB, 2GiB, 1TiB (binary multiples), as leakscope's options do.
bool parse_size(const char* text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || errno != 0 || text[0] == '-') return false;
  std::string unit(end);
  unsigned long long scale = 1;
  if (unit == "" || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KiB") {
    scale = 1ull << 10;
  } else if (unit == "M" || unit == "MB" || unit == "MiB") {
    scale = 1ull << 20;
  } else if (unit == "G" || unit == "GB" || unit == "GiB") {
    scale = 1ull << 30;
  } else if (unit == "T" || unit == "TB" || unit == "TiB") {
    scale = 1ull << 40;
  } else {
    return false;
  }
  if (value > static_cast<unsigned long long>(INT64_MAX) / scale) return false;
  *out = static_cast<int64_t>(value * scale);
  return true;
}

class LeakListener : public ::testing::EmptyTestEventListener {
 public:
  explicit LeakListener(int64_t default_limit) : default_limit_(default_limit) {}

  // Before the first test: glibc keeps joined threads' stacks, with the TLS block the loader
  // allocated for each, for the next threads; threads started together and joined now make those
  // blocks the runtime's before any test, not the first test's that starts that many.
  void OnTestProgramStart(const ::testing::UnitTest&) override {
    if (leakscope_is_active() == 0) return;
    std::vector<std::thread> warm;
    for (int i = 0; i < kWarmThreads; ++i) warm.emplace_back([] {});
    for (std::thread& thread : warm) thread.join();
  }

  // After the last test: a snapshot here has what the last test's fixture let go of already gone,
  // so that the whole-run gate does not take it for a shutdown that freed a leak as main returned.
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (leakscope_is_active() != 0) leakscope_snapshot_now();
  }

  void OnTestStart(const ::testing::TestInfo& test) override {
    active_ = leakscope_is_active() != 0;
    if (!active_) return;
    g_test_limit.store(kNoLimit);
    name_ = std::string(test.test_suite_name()) + "." + test.name();
    leakscope_task_begin(name_.c_str(), 0);
    before_ = host_live_bytes();  // last: what the listener itself allocated is not the test's
  }

  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (!active_) return;
    int64_t left = host_live_bytes() - before_;
    leakscope_task_end();
    int64_t limit = g_test_limit.load();
    if (limit == kNoLimit) limit = default_limit_;
    // A failed test's own failure records are live too; it has failed already.
    if (left <= limit || test.result()->Failed()) return;
    GTEST_MESSAGE_AT_(test.file(), test.line(), "", ::testing::TestPartResult::kNonFatalFailure)
        << "leakscope: the test left " << left << " bytes live, over its limit of " << limit
                  << " (LEAKSCOPE_ALLOW_LEAKED in the test, LEAKSCOPE_GTEST_MAX_LEAKED for all): what it allocated "
                  << "and did not free; in leakscope report, what it allocated on its own thread has the task \"" << name_
                  << "\"";
  }

 private:
  int64_t default_limit_;
  bool active_ = false;
  std::string name_;
  int64_t before_ = 0;
};

}  // namespace

::testing::TestEventListener* leak_listener() {
  int64_t limit = 0;
  const char* text = std::getenv("LEAKSCOPE_GTEST_MAX_LEAKED");
  if (text != nullptr && *text != '\0' && !parse_size(text, &limit)) {
    std::fprintf(stderr, "leakscope: error: LEAKSCOPE_GTEST_MAX_LEAKED: not a size (such as 512, 64KiB, 1MiB): %s\n", text);
    std::exit(2);
  }
  return new LeakListener(limit);
}

void allow_leaked(int64_t bytes) { g_test_limit.store(bytes < 0 ? 0 : bytes); }

}  // namespace leakscope
