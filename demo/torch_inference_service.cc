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
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "leakscope/leakscope.h"

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

struct Request {
  uint64_t id;
  uint64_t prompt_key;
  bool streaming;
};

__attribute__((noinline)) at::Tensor embed(const Request& request) {
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

__attribute__((noinline)) float handle_request(const Model& model, OutputCache& cache, const Request& request) {
  at::Tensor output = run_forward(model, embed(request));
  if (request.streaming) remember_session_state(output);
  cache.store(request.prompt_key, output);
  return output.sum().item<float>();
}

OutputCache* g_caches[2];

void worker(int index, const Model* model, double seconds, int rate, std::atomic<uint64_t>* served) {
  char name[16];
  std::snprintf(name, sizeof(name), "worker-%d", index);
  pthread_setname_np(pthread_self(), name);
  at::set_num_threads(1);
  OutputCache& cache = *g_caches[index];
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
  at::set_num_threads(1);
  leakscope_task_begin("startup", 0);
  Model* model = load_model_weights();
  g_caches[0] = new OutputCache;
  g_caches[1] = new OutputCache;
  leakscope_task_end();
  std::atomic<uint64_t> served{0};
  std::thread workers[] = {std::thread(worker, 0, model, seconds, rate, &served),
                           std::thread(worker, 1, model, seconds, rate, &served)};
  for (auto& thread : workers) thread.join();
  std::printf("served %llu requests\n", static_cast<unsigned long long>(served.load()));
  return 0;
}
