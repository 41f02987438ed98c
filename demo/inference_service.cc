// A small inference-like service with the memory behaviour of a real one, for the demo:
//   - model weights loaded at startup and kept for the life of the process;
//   - per-request temporaries (tokens, activations) freed when the request ends;
//   - a bounded LRU cache of responses;
//   - one real leak: streaming requests build a debug trace that is never freed.
// Each request runs as leakscope task "request" on one of two worker threads.
//
//   leakscope_demo_service [--seconds N] [--rate REQUESTS_PER_SECOND]
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "leakscope/leakscope.h"

namespace {

constexpr size_t kHiddenSize = 1024;
constexpr int kLayers = 6;

struct Model {
  std::vector<std::unique_ptr<float[]>> layers;
};

__attribute__((noinline)) Model* load_model_weights() {
  auto* model = new Model;
  for (int layer = 0; layer < kLayers; ++layer) {
    model->layers.emplace_back(new float[kHiddenSize * kHiddenSize]);  // 4 MiB per layer
    float* weights = model->layers.back().get();
    for (size_t i = 0; i < kHiddenSize * kHiddenSize; ++i) weights[i] = static_cast<float>(i % 7) * 0.01f;
  }
  return model;
}

// A bounded LRU cache: at most kCapacity responses of 4 KiB.
class ResponseCache {
 public:
  static constexpr size_t kCapacity = 128;

  __attribute__((noinline)) void store(uint64_t key, const std::string& response) {
    auto found = index_.find(key);
    if (found != index_.end()) {
      order_.erase(found->second);
      index_.erase(found);
    }
    order_.push_front({key, response});
    index_[key] = order_.begin();
    if (order_.size() > kCapacity) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  std::list<std::pair<uint64_t, std::string>> order_;
  std::unordered_map<uint64_t, std::list<std::pair<uint64_t, std::string>>::iterator> index_;
};

struct Request {
  uint64_t id;
  uint64_t prompt_key;
  bool streaming;
};

__attribute__((noinline)) std::vector<int> tokenize(const Request& request) {
  std::vector<int> tokens(256 + request.id % 64);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>((request.prompt_key + i) % 32000);
  return tokens;
}

__attribute__((noinline)) float run_inference(const Model& model, const std::vector<int>& tokens) {
  std::vector<float> activations(kHiddenSize * 8);  // 32 KiB per request, freed on return
  float sum = 0;
  for (int layer = 0; layer < kLayers; ++layer) {
    const float* weights = model.layers[layer].get();
    for (size_t i = 0; i < activations.size(); ++i) {
      activations[i] = weights[(i * 31 + tokens[i % tokens.size()]) % (kHiddenSize * kHiddenSize)] + activations[i] * 0.5f;
    }
    sum += activations[layer];
  }
  return sum;
}

// The bug: the trace is handed to a logger only when tracing is on, and nobody frees it otherwise.
__attribute__((noinline)) char* format_debug_trace(const Request& request, float score) {
  char* trace = new char[8192];
  std::snprintf(trace, 8192, "request %llu score %f", static_cast<unsigned long long>(request.id), score);
  return trace;
}

std::atomic<bool> g_trace_logging{false};

__attribute__((noinline)) std::string handle_request(const Model& model, ResponseCache& cache, const Request& request) {
  std::vector<int> tokens = tokenize(request);
  float score = run_inference(model, tokens);
  std::string response(4096, static_cast<char>('a' + request.id % 26));
  if (request.streaming) {
    char* trace = format_debug_trace(request, score);
    if (g_trace_logging.load()) {
      std::fputs(trace, stderr);
      delete[] trace;
    }
  }
  cache.store(request.prompt_key, response);
  return response;
}

// One response cache per worker, kept for the life of the process as services keep theirs.
ResponseCache* g_caches[2];

void worker(int index, const Model* model, double seconds, int rate, std::atomic<uint64_t>* served) {
  char name[16];
  std::snprintf(name, sizeof(name), "worker-%d", index);
  pthread_setname_np(pthread_self(), name);
  ResponseCache& cache = *g_caches[index];
  auto start = std::chrono::steady_clock::now();
  auto period = std::chrono::microseconds(1000000 / rate);
  uint64_t next_id = static_cast<uint64_t>(index);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    Request request{next_id, (next_id * 2654435761u) % 1000, next_id % 5 == 0};
    next_id += 2;
    leakscope_task_begin("request", 0);
    handle_request(*model, cache, request);
    leakscope_task_end();
    served->fetch_add(1);
    std::this_thread::sleep_for(period);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  int rate = 100;  // per worker
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--rate") == 0) rate = std::atoi(argv[i + 1]);
  }
  if (seconds <= 0 || rate <= 0) {
    std::fprintf(stderr, "usage: %s [--seconds N] [--rate REQUESTS_PER_SECOND]\n", argv[0]);
    return 2;
  }
  leakscope_task_begin("startup", 0);
  Model* model = load_model_weights();
  g_caches[0] = new ResponseCache;
  g_caches[1] = new ResponseCache;
  leakscope_task_end();
  std::atomic<uint64_t> served{0};
  std::thread workers[] = {std::thread(worker, 0, model, seconds, rate, &served),
                           std::thread(worker, 1, model, seconds, rate, &served)};
  for (auto& thread : workers) thread.join();
  std::printf("served %llu requests\n", static_cast<unsigned long long>(served.load()));
  return 0;
}
