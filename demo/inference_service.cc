// A small inference-like service with the memory behaviour of a real one, for the demo:
//   - model weights loaded at startup and kept for the life of the process;
//   - per-request temporaries (tokens, activations) freed when the request ends;
//   - a bounded LRU cache of responses;
//   - one real leak: streaming requests build a debug trace that is never freed.
// Each request runs as leakscope task "request" on one of two worker threads.
//
//   leakscope_demo_service [--seconds N] [--rate REQUESTS_PER_SECOND]
#include <atomic>
#include <cstdio>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "leakscope/leakscope.h"
#include "request_loop.h"

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

__attribute__((noinline)) std::vector<int> tokenize(const demo::Request& request) {
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
__attribute__((noinline)) char* format_debug_trace(const demo::Request& request, float score) {
  char* trace = new char[8192];
  std::snprintf(trace, 8192, "request %llu score %f", static_cast<unsigned long long>(request.id), score);
  return trace;
}

std::atomic<bool> g_trace_logging{false};

__attribute__((noinline)) std::string handle_request(const Model& model, ResponseCache& cache, const demo::Request& request) {
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

}  // namespace

int main(int argc, char** argv) {
  demo::Settings settings;
  if (!demo::parse_settings(argc, argv, &settings)) return 2;
  leakscope_task_begin("startup", 0);
  Model* model = load_model_weights();
  g_caches[0] = new ResponseCache;
  g_caches[1] = new ResponseCache;
  leakscope_task_end();
  uint64_t served = demo::serve(settings, [&](int index, const demo::Request& request) {
    handle_request(*model, *g_caches[index], request);
  });
  std::printf("served %llu requests\n", static_cast<unsigned long long>(served));
  return 0;
}
