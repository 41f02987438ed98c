// File: harness.h
//
// Runs real programs under leakscope and reads back what it recorded, for the integration tests.
// Paths of the CLI, the preload and the fixtures come from CMake as compile definitions.
#ifndef LEAKSCOPE_TESTS_INTEGRATION_HARNESS_H_
#define LEAKSCOPE_TESTS_INTEGRATION_HARNESS_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace leakscope::testing {

struct Outcome {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
  // Peak resident memory of the program itself: its VmHWM, read as it runs. Not the rusage of the
  // wait, which on exec takes in the peak of the process forked from, the test's own.
  long max_rss_kib = 0;
};

// run_program() runs argv with extra environment variables set (an empty value unsets one) and
// captures its output. Fails the test if the program does not end within `timeout_s`.
Outcome run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                    int timeout_s = 120);

// leakscope() runs the CLI with `args`.
Outcome leakscope(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});

// fixture() is the path of a test fixture program or library; fixture_source() that of a fixture
// script in the source tree.
std::string fixture(const std::string& name);
std::string fixture_source(const std::string& name);
std::string preload_library();

// marker_line() is the line of the fixture script `file` that carries the comment "# marker: NAME".
int marker_line(const std::string& file, const std::string& name);

// scratch_dir() is a fresh directory for this test's files.
std::string scratch_dir();

// steady_leak_stream() runs the steady_leak_ci fixture (a 2.5 s test binary whose parse_record
// keeps 250 records of 4096 bytes: a leak of exactly 1,024,000 bytes) under leakscope and returns
// its stream, in a scratch directory of its own.
std::string steady_leak_stream();

// dump() runs `leakscope dump --format json FILE` and parses it; fails the test on error.
nlohmann::json dump(const std::string& file, const std::vector<std::string>& extra = {});

// site_at() returns the live site whose innermost frame is `function` (exactly one must exist).
nlohmann::json site_at(const nlohmann::json& document, const std::string& function);

// sites_at() returns every live site whose innermost frame is `function`.
std::vector<nlohmann::json> sites_at(const nlohmann::json& document, const std::string& function);

// files_in() lists the regular files in a directory, sorted.
std::vector<std::string> files_in(const std::string& directory);

std::string read_file(const std::string& path);

// lines_wider_than() lists the lines of `text` longer than `columns` characters (UTF-8 aware).
std::vector<std::string> lines_wider_than(const std::string& text, size_t columns);

}  // namespace leakscope::testing

#endif  // LEAKSCOPE_TESTS_INTEGRATION_HARNESS_H_
