// `leakscope export`: the judged run as a pprof profile, read back by Go's own pprof, and as
// folded stacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace leakscope::testing {
namespace {

// go_pprof() runs Debian golang-go's `go tool pprof` with `args`.
Outcome go_pprof(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"go", "tool", "pprof"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, {{"HOME", scratch_dir()}, {"PPROF_TMPDIR", scratch_dir()}});
}

TEST(Export, PprofProfileIsReadByGosPprofWithTheLeaksFunctionAndExactBytes) {
  std::string file = steady_leak_stream();
  std::string profile = scratch_dir() + "/run.pb.gz";
  Outcome exported = leakscope({"export", file, "--pprof", profile});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(exported.out, "");

  Outcome leaked = go_pprof({"-top", "-sample_index=leaked_space", "-unit=byte", profile});
  ASSERT_EQ(leaked.exit_code, 0) << leaked.err << " (scripts/install_deps.sh installs golang-go)";
  EXPECT_NE(leaked.out.find("Type: leaked_space"), std::string::npos) << leaked.out;
  EXPECT_NE(leaked.out.find("Total samples = 1024000B"), std::string::npos) << leaked.out;
  std::istringstream lines(leaked.out);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    // flat, flat%, sum%, cum, cum%, function: the leak's function holds all of it itself.
    if (line.find("parse_record") != std::string::npos) {
      found = true;
      EXPECT_EQ(line.rfind("  1024000B", 0), 0u) << line;
    }
  }
  EXPECT_TRUE(found) << leaked.out;

  Outcome objects = go_pprof({"-traces", "-sample_index=inuse_objects", profile});
  ASSERT_EQ(objects.exit_code, 0) << objects.err;
  EXPECT_NE(objects.out.find("       250   parse_record"), std::string::npos) << objects.out;
  EXPECT_NE(objects.out.find("main"), std::string::npos) << objects.out;

  // The build-id of the executable names its mapping.
  Outcome raw = go_pprof({"-raw", profile});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.out.find("steady_leak_ci"), std::string::npos) << raw.out;
  EXPECT_NE(raw.out.find("domain:[heap] verdict:[leak]"), std::string::npos) << raw.out;
}

TEST(Export, PprofNamesTheProgramAsItsFileWhenTheLargestSiteIsInALibrary) {
  std::string file = scratch_dir() + "/run.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--", fixture("compressor_leak"), "120"}).exit_code, 0);
  std::string profile = scratch_dir() + "/run.pb.gz";
  ASSERT_EQ(leakscope({"export", file, "--pprof", profile}).exit_code, 0);
  Outcome top = go_pprof({"-top", profile});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // The leak's innermost frames are zlib's; the first mapping is still the program's.
  EXPECT_EQ(top.out.rfind("File: compressor_leak\n", 0), 0u) << top.out;
}

TEST(Export, FoldedStacksRunOutermostFirstAndSumToTheLiveBytes) {
  std::string file = steady_leak_stream();
  std::string folded = scratch_dir() + "/run.folded";
  ASSERT_EQ(leakscope({"export", file, "--folded", folded}).exit_code, 0);
  nlohmann::json judged = nlohmann::json::parse(leakscope({"report", "--format", "json", file}).out);
  std::istringstream lines(read_file(folded));
  std::string line;
  int64_t total = 0;
  bool leak_line = false;
  while (std::getline(lines, line)) {
    size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    int64_t bytes = std::stoll(line.substr(space + 1));
    EXPECT_GT(bytes, 0) << line;
    total += bytes;
    if (line.find("parse_record") != std::string::npos) {
      leak_line = true;
      EXPECT_NE(line.find(";main;parse_record 1024000"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(leak_line);
  int64_t live = 0;
  for (const auto& [domain, bytes] : judged["live_bytes_by_domain"].items()) live += bytes.get<int64_t>();
  EXPECT_EQ(total, live);
}

// The judged run as a Prometheus text file, for node_exporter's textfile collector or a
// Pushgateway: what `serve` answers on /metrics, which Prometheus's own checker reads clean.
TEST(Export, PrometheusTextFileHoldsTheLeakAndPassesPromtool) {
  std::string file = steady_leak_stream();
  std::string metrics = scratch_dir() + "/run.prom";
  Outcome exported = leakscope({"export", file, "--prometheus", metrics, "--label", "job=nightly"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::string text = read_file(metrics);
  EXPECT_NE(text.find("\nleakscope_live_bytes{job=\"nightly\",function=\"parse_record (steady_leak_ci.c:17)\",domain=\"heap\"} "
                      "1024000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nleakscope_verdict_live_bytes{job=\"nightly\",verdict=\"leak\"} 1024000\n"), std::string::npos) << text;
  Outcome checked = run_program({"bash", "-c", "promtool check metrics < " + metrics});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err << " (scripts/install_deps.sh installs prometheus)";

  Outcome label = leakscope({"export", file, "--prometheus", metrics, "--label", "verdict=x"});
  EXPECT_EQ(label.exit_code, 2);
  EXPECT_NE(label.err.find("--label: 'verdict' is one of leakscope's own labels"), std::string::npos) << label.err;
}

TEST(Export, NoOutputUnwritableOutputAndBadStreamsGetOneLine) {
  std::string file = steady_leak_stream();
  Outcome nothing = leakscope({"export", file});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_EQ(nothing.err,
            "leakscope: error: export needs an output: --pprof OUT.pb.gz, --folded OUT, --html OUT.html or --prometheus OUT.prom\n");
  Outcome unwritable = leakscope({"export", file, "--pprof", scratch_dir() + "/no/dir/run.pb.gz"});
  EXPECT_EQ(unwritable.exit_code, 4);
  EXPECT_NE(unwritable.err.find("cannot write"), std::string::npos) << unwritable.err;
  std::string garbage = scratch_dir() + "/garbage.lsc";
  std::ofstream(garbage) << std::string(1000, 'z');
  std::string out = scratch_dir() + "/out.folded";
  Outcome bad = leakscope({"export", garbage, "--folded", out, "--html", out + ".html"});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(out));  // nothing left behind, not even an empty file
  EXPECT_FALSE(std::filesystem::exists(out + ".html"));
  Outcome same = leakscope({"export", file, "--folded", out, "--html", out});
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.err.find("--folded and --html name one file"), std::string::npos) << same.err;
}

// The HTML page, rendered by headless Chromium (Debian `chromium`): its flame graph is SVG drawn
// by the page's own script and holds the leak's frame; a screenshot is kept under the build tree.
TEST(Export, HtmlPageRendersInChromiumWithTheLeakInItsFlameGraph) {
  std::string file = steady_leak_stream();
  std::string page = scratch_dir() + "/run.html";
  ASSERT_EQ(leakscope({"export", file, "--html", page}).exit_code, 0);
  std::string html = read_file(page);
  // Self-contained: nothing to fetch.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);

  std::vector<std::string> chromium{"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,1100"};
  std::vector<std::string> dump = chromium;
  dump.insert(dump.end(), {"--dump-dom", "file://" + page});
  Outcome dom = run_program(dump, {{"HOME", scratch_dir()}});
  ASSERT_EQ(dom.exit_code, 0) << dom.err << " (scripts/install_deps.sh installs chromium)";
  size_t flame = dom.out.find("<svg id=\"flame\"");
  ASSERT_NE(flame, std::string::npos) << dom.out.substr(0, 2000);
  std::string svg = dom.out.substr(flame, dom.out.find("</svg>", flame) - flame);
  EXPECT_NE(svg.find("<rect"), std::string::npos);
  EXPECT_NE(svg.find("<title>parse_record: 1000.00 KiB, leaking 1000.00 KiB</title>"), std::string::npos) << svg.substr(0, 3000);
  EXPECT_NE(svg.find(">parse_record</text>"), std::string::npos) << svg.substr(0, 3000);
  EXPECT_NE(dom.out.find("<polyline"), std::string::npos);  // the chart, drawn
  EXPECT_NE(dom.out.find("<td class=\"leak\">leak</td>"), std::string::npos);
  EXPECT_NE(dom.out.find("parse_record (steady_leak_ci.c:17)"), std::string::npos);

  std::string artifacts = std::string(LEAKSCOPE_BUILD_DIR) + "/test-artifacts";
  std::filesystem::create_directories(artifacts);
  std::vector<std::string> shot = chromium;
  shot.insert(shot.end(), {"--screenshot=" + artifacts + "/html-report.png", "file://" + page});
  Outcome screenshot = run_program(shot, {{"HOME", scratch_dir()}});
  EXPECT_EQ(screenshot.exit_code, 0) << screenshot.err;
  EXPECT_GT(std::filesystem::file_size(artifacts + "/html-report.png"), 10000u);
}

}  // namespace
}  // namespace leakscope::testing
