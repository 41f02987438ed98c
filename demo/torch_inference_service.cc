// The demo service on libtorch: the same memory behaviour as inference_service.cc, with tensors.
//   - model weights (tensors) made at startup and kept for the life of the process;
//   - per-request input and activation tensors, freed when the request ends;
//   - a bounded LRU cache of output tensors;
//   - one real leak: streaming requests append their hidden state to a session history that is
//     never trimmed (a tensor-level leak, seen in the c10_cpu domain).
// Each request runs as leakscope task "request" on one of two worker threads.
//
//   leakscope_demo_torch_service [--seconds N] [--rate REQUESTS_PER_SECOND]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "leakscope/leakscope.h"
#include "request_loop.h"

namespace {

constexpr int64_t kHiddenSize = 512;
constexpr int kLayers = 4;

struct Model {
  std::vector<at::Tensor> weights;  // kLayers of kHiddenSize x kHiddenSize floats (1 MiB each)
  std::vector<at::Tensor> biases;
};

__attribute__((noinline)) Model* load_model_weights() {
  auto* model = new Model;
  for (int layer = 0; layer < kLayers; ++layer) {
    model->weights.push_back(at::randn({kHiddenSize, kHiddenSize}) * 0.05);
    model->biases.push_back(at::zeros({kHiddenSize}));
  }
  return model;
}

// A bounded LRU cache of at most kCapacity output tensors (16 KiB each).
class OutputCache {
 public:
  static constexpr size_t kCapacity = 64;

  __attribute__((noinline)) void store(uint64_t key, const at::Tensor& output) {
    auto found = index_.find(key);
    if (found != index_.end()) {
      order_.erase(found->second);
      index_.erase(found);
    }
    order_.push_front({key, output.clone()});
    index_[key] = order_.begin();
    if (order_.size() > kCapacity) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  std::list<std::pair<uint64_t, at::Tensor>> order_;
  std::unordered_map<uint64_t, std::list<std::pair<uint64_t, at::Tensor>>::iterator> index_;
};

__attribute__((noinline)) at::Tensor embed(const demo::Request& request) {
  return at::full({8, kHiddenSize}, static_cast<double>(request.prompt_key % 97) / 97.0);
}

__attribute__((noinline)) at::Tensor run_forward(const Model& model, const at::Tensor& input) {
  at::Tensor hidden = input;
  for (int layer = 0; layer < kLayers; ++layer) {
    hidden = at::relu(at::linear(hidden, model.weights[layer], model.biases[layer]));
  }
  return hidden;
}

// The bug: streaming sessions keep their hidden state for a follow-up that never comes.
std::mutex g_sessions_lock;
std::vector<at::Tensor>* g_session_history = new std::vector<at::Tensor>;

__attribute__((noinline)) void remember_session_state(const at::Tensor& hidden) {
  std::lock_guard<std::mutex> guard(g_sessions_lock);
  g_session_history->push_back(hidden.slice(0, 0, 1).clone());
}

__attribute__((noinline)) float handle_request(const Model& model, OutputCache& cache, const demo::Request& request) {
  at::Tensor output = run_forward(model, embed(request));
  if (request.streaming) remember_session_state(output);
  cache.store(request.prompt_key, output);
  return output.sum().item<float>();
}

OutputCache* g_caches[2];

}  // namespace

int main(int argc, char** argv) {
  demo::Settings settings;
  if (!demo::parse_settings(argc, argv, &settings)) return 2;
  at::set_num_threads(1);
  leakscope_task_begin("startup", 0);
  Model* model = load_model_weights();
  g_caches[0] = new OutputCache;
  g_caches[1] = new OutputCache;
  leakscope_task_end();
  uint64_t served = demo::serve(settings, [&](int index, const demo::Request& request) {
    handle_request(*model, *g_caches[index], request);
  });
  std::printf("served %llu requests\n", static_cast<unsigned long long>(served));
  return 0;
}
