// The live Prometheus endpoint: `leakscope run --prometheus` scraped by a real Prometheus server
// (Debian `prometheus`, started here on loopback with a configuration of its own), and
// `leakscope serve` on a stream, checked line by line against the report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>

#include "harness.h"

namespace leakscope::testing {
namespace {

// Two loopback ports of this test process's own, apart from other test processes'.
int port_base() { return 20000 + static_cast<int>(getpid() % 9000) * 2; }

std::string metric_line(const std::string& metrics, const std::string& prefix) {
  size_t at = metrics.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return metrics.substr(at + 1, metrics.find('\n', at + 1) - at - 1);
}

TEST(Prometheus, ARealServerScrapesTheRunningServiceAndAQueryFindsItsLeak) {
  std::string dir = scratch_dir();
  // The dashboard's queries, run on the server too (for the model the service is labelled with).
  nlohmann::json dashboard =
      nlohmann::json::parse(read_file(std::string(LEAKSCOPE_SOURCE_DIR) + "/examples/grafana/leakscope-dashboard.json"));
  std::string panels;
  size_t queries = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      panels += std::regex_replace(target["expr"].get<std::string>(), std::regex("\\$model"), "qwen2") + "\n";
      ++queries;
    }
  }
  std::ofstream(dir + "/panels") << panels;
  int metrics_port = port_base(), prometheus_port = port_base() + 1;
  std::string script = R"SH(
set -u
dir="$DIR" cli="$CLI" demo="$DEMO"
"$cli" run -o "$dir/svc.lsc" --interval 250ms --prometheus "127.0.0.1:$METRICS_PORT" \
  --label model=qwen2 --label stage=inference -- "$demo" --seconds 14 > "$dir/run.out" 2>&1 &
run=$!
cat > "$dir/prometheus.yml" <<CONFIG
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: leakscope
    static_configs: [{targets: ['127.0.0.1:$METRICS_PORT']}]
CONFIG
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
  --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" > "$dir/prometheus.log" 2>&1 &
server=$!
query() { curl -s "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query" --data-urlencode "query=$1"; echo; }
for attempt in $(seq 1 40); do
  sleep 0.5
  result=$(query 'leakscope_live_bytes * ignoring(verdict) (leakscope_group_verdict{verdict="leak"} == 1)')
  case "$result" in *format_debug_trace*) break ;; esac
done
echo "LEAK $result"
echo "UP $(query 'up{job="leakscope"}')"
echo "RATE $(query 'sum(leakscope_verdict_growth_bytes_per_minute{verdict="leak",stage="inference"})')"
while IFS= read -r expr; do echo "PANEL $(query "$expr")"; done < "$dir/panels"
echo "SERIES $(query 'count(count_over_time(leakscope_live_bytes{function="format_debug_trace (inference_service.cc:84)"}[10m]))')"
echo "VERDICTS $(query 'count(count_over_time(leakscope_group_verdict{function="format_debug_trace (inference_service.cc:84)"}[10m]))')"
wait $run
echo "RUN $?"
echo "ENDED $(query 'last_over_time(leakscope_process_running[1m])')"
kill $server
)SH";
  std::map<std::string, std::string> env{{"DIR", dir},
                                         {"CLI", LEAKSCOPE_CLI},
                                         {"DEMO", LEAKSCOPE_DEMO},
                                         {"METRICS_PORT", std::to_string(metrics_port)},
                                         {"PROMETHEUS_PORT", std::to_string(prometheus_port)}};
  Outcome outcome = run_program({"bash", "-c", script}, env, 90);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  auto field = [&](const std::string& name) {
    size_t at = outcome.out.find(name + " ");
    return at == std::string::npos ? std::string() : outcome.out.substr(at + name.size() + 1,
                                                                        outcome.out.find('\n', at) - at - name.size() - 1);
  };
  ASSERT_FALSE(field("LEAK").empty()) << outcome.out << read_file(dir + "/prometheus.log");
  nlohmann::json leak = nlohmann::json::parse(field("LEAK"));
  ASSERT_EQ(leak["status"], "success") << field("LEAK");
  ASSERT_EQ(leak["data"]["result"].size(), 1u) << field("LEAK");
  const nlohmann::json& series = leak["data"]["result"][0];
  EXPECT_EQ(series["metric"]["function"], "format_debug_trace (inference_service.cc:84)");
  EXPECT_EQ(series["metric"]["domain"], "heap");
  EXPECT_EQ(series["metric"]["model"], "qwen2");
  EXPECT_EQ(series["metric"]["stage"], "inference");
  EXPECT_GT(std::stod(series["value"][1].get<std::string>()), 0.0);
  nlohmann::json up = nlohmann::json::parse(field("UP"));
  ASSERT_EQ(up["data"]["result"].size(), 1u) << field("UP");
  EXPECT_EQ(up["data"]["result"][0]["value"][1], "1");
  nlohmann::json rate = nlohmann::json::parse(field("RATE"));
  ASSERT_EQ(rate["data"]["result"].size(), 1u) << field("RATE");
  EXPECT_GT(std::stod(rate["data"]["result"][0]["value"][1].get<std::string>()), 1024.0 * 1024);  // MiB a minute
  // One series for the leak's bytes over the whole run, whatever its verdict was at each scrape
  // (unknown over the first snapshots, a leak since): the verdict is the state set's four series.
  auto instant = [&](const std::string& name) {
    nlohmann::json answer = nlohmann::json::parse(field(name));
    return answer["data"]["result"].size() == 1u ? answer["data"]["result"][0]["value"][1].get<std::string>() : std::string();
  };
  EXPECT_EQ(instant("SERIES"), "1") << field("SERIES");
  EXPECT_EQ(instant("VERDICTS"), "4") << field("VERDICTS");
  size_t answered = 0;
  for (size_t at = outcome.out.find("PANEL "); at != std::string::npos; at = outcome.out.find("PANEL ", at + 1)) {
    std::string answer = outcome.out.substr(at + 6, outcome.out.find('\n', at) - at - 6);
    nlohmann::json parsed = nlohmann::json::parse(answer);
    EXPECT_EQ(parsed["status"], "success") << answer;
    EXPECT_FALSE(parsed["data"]["result"].empty()) << "a dashboard query finds nothing: " << answer;
    ++answered;
  }
  EXPECT_EQ(answered, queries);
  EXPECT_EQ(field("RUN"), "0") << read_file(dir + "/run.out");
  // run served the final metrics until a scrape had read them: the server saw the process end.
  EXPECT_EQ(instant("ENDED"), "0") << field("ENDED") << read_file(dir + "/run.out");
  EXPECT_NE(read_file(dir + "/run.out").find("serving the metrics on http://127.0.0.1:"), std::string::npos);
}

// Started before the process it watches, serve waits for the stream: 503 until it is there, then
// its metrics. A path whose directory does not exist is a mistake, said at once.
TEST(Prometheus, ServeStartedBeforeTheStreamExistsAnswersOnceItIsWritten) {
  std::string file = scratch_dir() + "/later.lsc";
  std::string port = std::to_string(port_base());
  std::string url = "http://127.0.0.1:" + port + "/metrics";
  std::string script = "\"" + std::string(LEAKSCOPE_CLI) + "\" serve " + file + " --prometheus 127.0.0.1:" + port +
                       " & serve=$!; for i in $(seq 1 40); do sleep 0.25; code=$(curl -s -o /dev/null -w '%{http_code}' " +
                       url + ") && [ \"$code\" != 000 ] && break; done; echo \"BEFORE $code\"; cp " + steady_leak_stream() +
                       " " + file + "; curl -sf " + url + " | grep -c '^leakscope_live_bytes{'; kill -TERM $serve; wait $serve; "
                       "echo \"SERVE $?\"";
  Outcome served = run_program({"bash", "-c", script}, {}, 60);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_NE(served.out.find("BEFORE 503\n"), std::string::npos) << served.out << served.err;
  EXPECT_NE(served.out.find("SERVE 0\n"), std::string::npos) << served.out;
  EXPECT_EQ(served.out.find("\n0\n"), std::string::npos) << "metrics once written: " << served.out;
  EXPECT_NE(served.err.find("is not written yet: /metrics answers 503 until it holds a snapshot"), std::string::npos)
      << served.err;

  Outcome nowhere = leakscope({"serve", "/nonexistent/dir/run.lsc", "--prometheus", "127.0.0.1:" + port});
  EXPECT_EQ(nowhere.exit_code, 3);
  EXPECT_NE(nowhere.err.find("no such file, and no directory /nonexistent/dir to find it in"), std::string::npos) << nowhere.err;
}

// A stream read while its process writes it ends in a frame half written as a matter of course:
// the scrapes answer with what is whole, and serve says nothing of the torn frame at each one.
TEST(Prometheus, ServeReadsAStreamBeingWrittenWithoutWarningOfItsHalfWrittenFrame) {
  std::string whole = read_file(steady_leak_stream());
  std::string file = scratch_dir() + "/writing.lsc";
  std::ofstream(file, std::ios::binary) << whole.substr(0, whole.size() - 7);
  std::string port = std::to_string(port_base());
  std::string script = "\"" + std::string(LEAKSCOPE_CLI) + "\" serve " + file + " --prometheus 127.0.0.1:" + port +
                       " & serve=$!; for i in $(seq 1 40); do sleep 0.25; curl -sf http://127.0.0.1:" + port +
                       "/metrics > /dev/null && break; done; curl -sf http://127.0.0.1:" + port +
                       "/metrics | grep '^leakscope_process_running'; kill -TERM $serve; wait $serve";
  Outcome served = run_program({"bash", "-c", script}, {}, 60);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_NE(served.out.find("leakscope_process_running 1"), std::string::npos) << "its final snapshot is the torn frame: " << served.out;
  EXPECT_EQ(served.err.find("torn"), std::string::npos) << served.err;
}

TEST(Prometheus, ServeAnswersTheReportsFiguresAndRefusesBadAddressesAndLabels) {
  std::string file = steady_leak_stream();
  int port = port_base();
  std::string script = "\"" + std::string(LEAKSCOPE_CLI) + "\" serve " + file + " --prometheus 127.0.0.1:" +
                       std::to_string(port) + " --label 'site=eu \"west\"' & serve=$!; for i in $(seq 1 40); do "
                       "sleep 0.25; curl -sf http://127.0.0.1:" + std::to_string(port) +
                       "/metrics && break; done; kill -TERM $serve; wait $serve; echo \"SERVE $?\"";
  Outcome served = run_program({"bash", "-c", script}, {}, 60);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_NE(served.out.find("# TYPE leakscope_live_bytes gauge"), std::string::npos) << served.out;
  EXPECT_EQ(metric_line(served.out, "leakscope_live_bytes{site=\"eu \\\"west\\\"\",function=\"parse_record"),
            "leakscope_live_bytes{site=\"eu \\\"west\\\"\",function=\"parse_record (steady_leak_ci.c:17)\",domain=\"heap\"} 1024000")
      << served.out;
  for (const char* verdict : {"leak", "cache", "startup", "unknown"}) {
    std::string line = metric_line(served.out, "leakscope_group_verdict{site=\"eu \\\"west\\\"\",function=\"parse_record "
                                               "(steady_leak_ci.c:17)\",domain=\"heap\",verdict=\"" + std::string(verdict) + "\"}");
    EXPECT_EQ(line.substr(line.rfind(' ') + 1), std::string(verdict) == "leak" ? "1" : "0") << verdict << "\n" << served.out;
  }
  EXPECT_NE(served.out.find("\nleakscope_verdict_live_bytes{site=\"eu \\\"west\\\"\",verdict=\"leak\"} 1024000\n"), std::string::npos)
      << served.out;
  EXPECT_NE(served.out.find("\nleakscope_process_running{site=\"eu \\\"west\\\"\"} 0\n"), std::string::npos) << served.out;
  std::string peak = metric_line(served.out, "leakscope_peak_tracked_bytes{");
  ASSERT_FALSE(peak.empty()) << served.out;
  EXPECT_GE(std::stod(peak.substr(peak.rfind(' ') + 1)), 1024000) << peak;
  EXPECT_NE(served.out.find("SERVE 0"), std::string::npos) << served.out;  // SIGTERM ends it cleanly

  // The Grafana dashboard in examples/: a dashboard's shape, over series the endpoint serves.
  nlohmann::json dashboard =
      nlohmann::json::parse(read_file(std::string(LEAKSCOPE_SOURCE_DIR) + "/examples/grafana/leakscope-dashboard.json"));
  EXPECT_TRUE(dashboard["title"].is_string());
  ASSERT_TRUE(dashboard["panels"].is_array());
  ASSERT_GE(dashboard["panels"].size(), 4u);
  std::regex metric_name("leakscope_[a-z_]+");
  for (const auto& panel : dashboard["panels"]) {
    EXPECT_TRUE(panel["id"].is_number() && panel["type"].is_string() && panel["title"].is_string()) << panel.dump();
    EXPECT_TRUE(panel["gridPos"].contains("w") && panel["gridPos"].contains("h")) << panel.dump();
    ASSERT_TRUE(panel["targets"].is_array() && !panel["targets"].empty()) << panel.dump();
    for (const auto& target : panel["targets"]) {
      ASSERT_TRUE(target["refId"].is_string() && target["expr"].is_string()) << target.dump();
      std::string expr = target["expr"];
      for (auto match = std::sregex_iterator(expr.begin(), expr.end(), metric_name); match != std::sregex_iterator(); ++match) {
        EXPECT_NE(served.out.find("# TYPE " + match->str() + " "), std::string::npos) << match->str() << " in " << expr;
      }
    }
  }

  Outcome remote = leakscope({"serve", file, "--prometheus", "0.0.0.0:9464"});
  EXPECT_EQ(remote.exit_code, 2);
  EXPECT_NE(remote.err.find("is not a loopback address; --listen-remote serves the metrics to other machines"),
            std::string::npos)
      << remote.err;
  Outcome label = leakscope({"serve", file, "--prometheus", "127.0.0.1:9464", "--label", "2bad=x"});
  EXPECT_EQ(label.exit_code, 2);
  EXPECT_NE(label.err.find("--label: not NAME=VALUE"), std::string::npos) << label.err;
  Outcome port_text = leakscope({"run", "--prometheus", "127.0.0.1:http", "--", "true"});
  EXPECT_EQ(port_text.exit_code, 2);
  EXPECT_NE(port_text.err.find("--prometheus: not a port"), std::string::npos) << port_text.err;

  // A port another process holds: serve and run both say so before anything starts. The holder is
  // waited for until it listens (a loaded machine may take seconds to start it).
  std::string address = "127.0.0.1/" + std::to_string(port);
  std::string busy = "/usr/bin/python3 -c 'import socket,time; s=socket.socket(); s.bind((\"127.0.0.1\"," +
                     std::to_string(port) + ")); s.listen(); time.sleep(20)' & holder=$!; for i in $(seq 1 200); do "
                     "(exec 3<>/dev/tcp/" + address + ") 2>/dev/null && break; sleep 0.1; done; \"" +
                     std::string(LEAKSCOPE_CLI) + "\" serve " + file + " --prometheus 127.0.0.1:" + std::to_string(port) +
                     "; echo \"CODE $?\"; kill $holder";
  Outcome taken = run_program({"bash", "-c", busy}, {}, 30);
  EXPECT_NE(taken.out.find("CODE 7"), std::string::npos) << taken.out << taken.err;
  EXPECT_NE(taken.err.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos) << taken.err;
}

}  // namespace
}  // namespace leakscope::testing
