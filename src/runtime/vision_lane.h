// The engine's vision lane: a thread that encodes the requests' images, first come first served,
// while the engine thread runs decoder steps, so that one page's vision encoder no longer stalls
// the other pages' prefill and decode (runtime/engine.h).
//
// The cores are shared by two thread pools while both sides have work: the lane's encoding runs on
// half of them (vision_pool) and the engine's steps on the rest (step_pool, which the engine puts
// in a ThreadPool::ScopedUse while the lane is busy); an encoding with no decoder work beside it
// runs on the whole process-wide pool. The pool is chosen before each encoder layer, so a step that
// starts in the middle of a whole-pool layer shares the cores for the rest of that layer.
//
// Needs an executor whose vision calls may run beside its steps (Executor::concurrent_vision: the
// host backends) and at least 2 threads; off by default (EngineOptions::vision_lane): on a 2-core
// machine a core decodes at half the speed of two, and the pages' decodes no longer batch up, so the
// lane costs pages per hour there (docs/benchmarks.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_pool.h"
#include "model/executor.h"

namespace locr::runtime {

class VisionLane {
 public:
  // One request's images. The engine reads the results once `done` is set.
  struct Task {
    std::vector<model::ProcessedImage> images;
    std::string fault;                  // non-empty: the encoding fails with this (--debug-fail-vision)
    std::atomic<bool> cancelled{false};  // the request ended: stop at the next layer
    std::atomic<bool> done{false};
    // Valid once done: the embeddings, or the error, and the encoder's wall time.
    std::shared_ptr<model::ImageEmbeds> embeds;
    std::string error;
    double seconds = 0;
  };

  // on_done runs on the lane's thread after each task (the engine wakes up to collect it).
  VisionLane(model::Executor& exec, int total_threads, std::function<void()> on_done);
  ~VisionLane();
  VisionLane(const VisionLane&) = delete;
  VisionLane& operator=(const VisionLane&) = delete;

  void submit(std::shared_ptr<Task> task);
  // A task queued or running: the engine's steps then run on step_pool().
  bool busy() const { return pending_.load() > 0; }
  ThreadPool* step_pool() { return &step_pool_; }
  // Whether the engine has decoder work this step (the next layer takes vision_pool, else the whole pool).
  void set_engine_busy(bool busy) { engine_busy_.store(busy); }
  int vision_threads() const { return vision_pool_.size(); }

 private:
  void loop();
  void run(Task& t);

  model::Executor& exec_;
  ThreadPool vision_pool_, step_pool_;
  std::function<void()> on_done_;
  std::atomic<int> pending_{0};
  std::atomic<bool> engine_busy_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace locr::runtime
