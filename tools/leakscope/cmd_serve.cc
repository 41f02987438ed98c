// leakscope serve: the Prometheus endpoint for a stream that a process traced through LD_PRELOAD
// is writing, read as it grows, until SIGINT or SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <thread>

#include <fmt/format.h>

#include "cli.h"
#include "metrics_server.h"

namespace leakscope::cli {

int parse_metric_labels(const std::vector<std::string>& labels, size_t top, report::MetricsOptions* options) {
  for (const std::string& label : labels) {
    size_t equals = label.find('=');
    std::string name = label.substr(0, equals);
    if (equals == std::string::npos || !report::valid_label_name(name)) {
      return fail(kUsage, fmt::format("--label: not NAME=VALUE with a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*): {}", label));
    }
    if (name == "function" || name == "domain" || name == "verdict") {
      return fail(kUsage, fmt::format("--label: '{}' is one of leakscope's own labels", name));
    }
    options->labels.emplace_back(name, label.substr(equals + 1));
  }
  options->top = top;
  return kOk;
}

int prepare_metrics(const std::string& address, bool listen_remote, const std::vector<std::string>& labels, size_t top,
                    MetricsServerOptions* options) {
  std::string error;
  if (!parse_listen_address(address, listen_remote, &options->address, &error)) return fail(kUsage, error);
  return parse_metric_labels(labels, top, &options->metrics);
}

int serve_command(const ServeOptions& options) {
  MetricsServerOptions server_options;
  if (int code = prepare_metrics(options.prometheus, options.listen_remote, options.labels, options.top, &server_options);
      code != kOk) {
    return code;
  }
  // Started before the process it watches, serve waits for the stream: /metrics answers 503 until
  // it holds a snapshot.
  if (access(options.file.c_str(), F_OK) == 0) {
    if (access(options.file.c_str(), R_OK) != 0) return fail(kBadInput, fmt::format("{}: cannot read it", options.file));
  } else {
    size_t slash = options.file.rfind('/');
    std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : options.file.substr(0, slash);
    if (access(directory.c_str(), R_OK | X_OK) != 0) {
      return fail(kBadInput, fmt::format("{}: no such file, and no directory {} to find it in", options.file, directory));
    }
    fmt::print(stderr, "leakscope: {} is not written yet: /metrics answers 503 until it holds a snapshot\n", options.file);
  }
  // The signals that end serve are taken by one thread, which stops the server.
  sigset_t ending;
  sigemptyset(&ending);
  sigaddset(&ending, SIGINT);
  sigaddset(&ending, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &ending, nullptr);
  MetricsServer server(server_options, [&] { return options.file; });
  std::string error;
  if (!server.bind(&error)) return fail(kCannotListen, error);
  fmt::print(stderr, "leakscope: serving the metrics of {} on http://{}:{}/metrics\n", options.file,
             server_options.address.host, server_options.address.port);
  std::thread stopper([&] {
    int received = 0;
    sigwait(&ending, &received);
    server.stop();
  });
  server.serve();
  stopper.join();
  return kOk;
}

}  // namespace leakscope::cli
