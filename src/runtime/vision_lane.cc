#include "runtime/vision_lane.h"

#include <chrono>
#include <stdexcept>

#include "core/log.h"

namespace locr::runtime {

VisionLane::VisionLane(model::Executor& exec, int total_threads, std::function<void()> on_done)
    : exec_(exec),
      vision_pool_(std::max(1, total_threads / 2)),
      step_pool_(std::max(1, total_threads - std::max(1, total_threads / 2))),
      on_done_(std::move(on_done)) {
  thread_ = std::thread([this] { loop(); });
}

VisionLane::~VisionLane() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    for (auto& t : queue_) t->cancelled.store(true);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void VisionLane::submit(std::shared_ptr<Task> task) {
  pending_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void VisionLane::loop() {
  for (;;) {
    std::shared_ptr<Task> t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      t = queue_.front();
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      run(*t);
    } catch (const std::exception& e) {
      t->error = e.what();
      t->embeds.reset();
    }
    t->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.pop_front();
    }
    pending_.fetch_sub(1);
    t->done.store(true);
    on_done_();
  }
}

void VisionLane::run(Task& t) {
  if (!t.fault.empty()) throw std::runtime_error(t.fault);
  // The pool of the next piece of work: half the cores beside the engine's steps, else all of them.
  auto pool = [&] { return engine_busy_.load() ? &vision_pool_ : nullptr; };
  std::unique_ptr<model::VisionJob> job;
  {
    ThreadPool::ScopedUse use(pool());
    job = exec_.vision_begin(t.images);
  }
  while (!job->done()) {
    if (t.cancelled.load()) return;
    ThreadPool::ScopedUse use(pool());
    exec_.vision_run(*job, 1);
  }
  if (t.cancelled.load()) return;
  ThreadPool::ScopedUse use(pool());
  t.embeds = exec_.vision_finish(*job);
}

}  // namespace locr::runtime
