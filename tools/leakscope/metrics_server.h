// File: metrics_server.h
//
// The Prometheus endpoint of `leakscope serve` and `leakscope run --prometheus`: GET /metrics
// judges the stream (again, when it has grown since the last scrape) and answers its metrics
// (report/prometheus_format.h); 503 while the stream has no snapshot to judge.
#ifndef LEAKSCOPE_TOOLS_METRICS_SERVER_H_
#define LEAKSCOPE_TOOLS_METRICS_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "report/prometheus_format.h"

namespace leakscope::cli {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// parse_listen_address() reads HOST:PORT ("127.0.0.1:9464", "[::1]:9464", "localhost:9464"); a
// host that is not loopback needs `remote_allowed`. False with a one-line `error`.
bool parse_listen_address(const std::string& text, bool remote_allowed, ListenAddress* out, std::string* error);

struct MetricsServerOptions {
  ListenAddress address;
  report::MetricsOptions metrics;
};

class MetricsServer {
 public:
  // `stream` names the stream to read at each scrape (run learns it once the command started).
  MetricsServer(const MetricsServerOptions& options, std::function<std::string()> stream);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // bind() takes the address; false with a one-line `error` when it cannot.
  bool bind(std::string* error);
  // serve() answers requests until stop() (called from another thread).
  void serve();
  void stop();
  // answered_since() tells whether a scrape that began at `since` (steady clock) or later has been
  // answered with metrics: one that read the stream as it is from then on.
  bool answered_since(std::chrono::steady_clock::time_point since) const;

 private:
  std::string metrics(std::string* error);

  struct State;
  MetricsServerOptions options_;
  std::function<std::string()> stream_;
  std::unique_ptr<State> state_;
};

}  // namespace leakscope::cli

#endif  // LEAKSCOPE_TOOLS_METRICS_SERVER_H_
