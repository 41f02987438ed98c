// File: request_loop.h
//
// What both demo services share: their command line, and the request loop of two named worker
// threads that serve `rate` requests a second each for `seconds`, every request a leakscope task
// "request". Every fifth request streams (the one that leaks).
#ifndef LEAKSCOPE_DEMO_REQUEST_LOOP_H_
#define LEAKSCOPE_DEMO_REQUEST_LOOP_H_

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "leakscope/leakscope.h"

namespace demo {

struct Request {
  uint64_t id;
  uint64_t prompt_key;
  bool streaming;
};

struct Settings {
  double seconds = 10;
  int rate = 100;  // per worker
};

// parse_settings() reads [--seconds N] [--rate REQUESTS_PER_SECOND]; false (after printing the
// usage) when they make no sense.
inline bool parse_settings(int argc, char** argv, Settings* settings) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) settings->seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--rate") == 0) settings->rate = std::atoi(argv[i + 1]);
  }
  if (settings->seconds > 0 && settings->rate > 0) return true;
  std::fprintf(stderr, "usage: %s [--seconds N] [--rate REQUESTS_PER_SECOND]\n", argv[0]);
  return false;
}

// serve() runs the two workers until `settings.seconds` have passed; handle(worker, request) serves
// one request. Returns how many were served.
template <typename Handle>
uint64_t serve(const Settings& settings, Handle handle) {
  std::atomic<uint64_t> served{0};
  auto work = [&](int index) {
    char name[16];
    std::snprintf(name, sizeof(name), "worker-%d", index);
    pthread_setname_np(pthread_self(), name);
    auto start = std::chrono::steady_clock::now();
    auto period = std::chrono::microseconds(1000000 / settings.rate);
    uint64_t next_id = static_cast<uint64_t>(index);
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < settings.seconds) {
      Request request{next_id, (next_id * 2654435761u) % 1000, next_id % 5 == 0};
      next_id += 2;
      leakscope_task_begin("request", 0);
      handle(index, request);
      leakscope_task_end();
      served.fetch_add(1);
      std::this_thread::sleep_for(period);
    }
  };
  std::thread workers[] = {std::thread(work, 0), std::thread(work, 1)};
  for (auto& thread : workers) thread.join();
  return served.load();
}

}  // namespace demo

#endif  // LEAKSCOPE_DEMO_REQUEST_LOOP_H_
