// The /metrics endpoint of `leakscope serve` and `run --prometheus`: the stream judged again
// whenever it has grown since the last scrape, its metrics served as Prometheus reads them.
// Symbolization and HTTP stay here, out of the traced process.
#include "metrics_server.h"

#include <sys/stat.h>

#include <atomic>
#include <mutex>

#include <fmt/format.h>
#include <httplib.h>

#include "report/analysis.h"

namespace leakscope::cli {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

bool parse_listen_address(const std::string& text, bool remote_allowed, ListenAddress* out, std::string* error) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    *error = fmt::format("--prometheus: not HOST:PORT (such as 127.0.0.1:9464): {}", text);
    return false;
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535) {
    *error = fmt::format("--prometheus: not a port (1 to 65535): {}", text.substr(colon + 1));
    return false;
  }
  if (!is_loopback(host) && !remote_allowed) {
    *error = fmt::format("--prometheus: {} is not a loopback address; --listen-remote serves the metrics to other machines",
                         host);
    return false;
  }
  out->host = host;
  out->port = static_cast<int>(port);
  return true;
}

struct MetricsServer::State {
  httplib::Server server;
  std::atomic<int64_t> last_answer_began_ns{INT64_MIN};  // steady clock, of the latest scrape answered
  std::mutex lock;  // over the cache below: scrapes may come on several connections
  std::string cached;
  off_t cached_size = -1;
  struct timespec cached_time {};
};

MetricsServer::MetricsServer(const MetricsServerOptions& options, std::function<std::string()> stream)
    : options_(options), stream_(std::move(stream)), state_(std::make_unique<State>()) {
  state_->server.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    int64_t began = std::chrono::steady_clock::now().time_since_epoch().count();
    std::string error;
    std::string text = metrics(&error);
    if (!error.empty()) {
      response.status = 503;
      response.set_content(error + "\n", "text/plain; charset=utf-8");
      return;
    }
    response.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
    int64_t latest = state_->last_answer_began_ns.load();
    while (began > latest && !state_->last_answer_began_ns.compare_exchange_weak(latest, began)) {
    }
  });
  state_->server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("leakscope: the metrics are on /metrics\n", "text/plain; charset=utf-8");
  });
}

MetricsServer::~MetricsServer() = default;

std::string MetricsServer::metrics(std::string* error) {
  std::string path = stream_();
  std::lock_guard<std::mutex> guard(state_->lock);
  struct stat status {};
  if (path.empty() || stat(path.c_str(), &status) != 0) {
    *error = "leakscope: no stream to read yet";
    return "";
  }
  if (status.st_size == state_->cached_size && status.st_mtim.tv_sec == state_->cached_time.tv_sec &&
      status.st_mtim.tv_nsec == state_->cached_time.tv_nsec) {
    return state_->cached;
  }
  try {
    report::StreamReader reader(path);
    reader.set_being_written();
    std::unique_ptr<report::RunAnalysis> analysis = report::analyze_run(reader, {});
    state_->cached = report::prometheus_metrics(*analysis, options_.metrics);
    state_->cached_size = status.st_size;
    state_->cached_time = status.st_mtim;
    return state_->cached;
  } catch (const report::StreamError& stream_error) {
    *error = std::string("leakscope: ") + stream_error.what();  // no snapshot yet, or damaged
    return "";
  }
}

bool MetricsServer::bind(std::string* error) {
  if (!state_->server.bind_to_port(options_.address.host.c_str(), options_.address.port)) {
    *error = fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", options_.address.host,
                         options_.address.port);
    return false;
  }
  return true;
}

void MetricsServer::serve() { state_->server.listen_after_bind(); }

void MetricsServer::stop() { state_->server.stop(); }

bool MetricsServer::answered_since(std::chrono::steady_clock::time_point since) const {
  return state_->last_answer_began_ns.load() >= since.time_since_epoch().count();
}

}  // namespace leakscope::cli
