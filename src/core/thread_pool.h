// A fork-join thread pool: parallel_for splits [0, n) into chunks run by persistent workers.
//
// The calling thread takes part in the work, so a pool of N threads starts N-1 workers and never
// oversubscribes. Not a task scheduler: one parallel_for runs at a time per pool (concurrent callers
// take turns; a nested call from inside a job runs inline).
//
// Workers (and the caller waiting for them) spin for a short while (~tens of microseconds) before
// sleeping on a condition variable: a decode step issues hundreds of parallel_for calls of a few
// microseconds each, and a futex wake-up per call would cost as much as the work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace locr {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(begin, end) over chunks covering [0, n). `grain` is the smallest chunk size.
  // fn receives also the index of the thread running it (0..size()-1) for scratch buffers.
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end, int thread)>& fn);

  // Process-wide pool used by kernels; configured once by the frontend (--threads). A thread in a
  // ScopedUse gets that scope's pool instead (a lane of the engine: see runtime/engine.h).
  static ThreadPool& global();
  static void set_global_threads(int n);
  // Number of physical cores (falls back to hardware_concurrency).
  static int default_threads();

  // While alive, global() returns `pool` on the constructing thread (nullptr: the process-wide
  // one); scopes nest. Kernels take their pool from global() at each call, so work started in the
  // scope runs on `pool`'s threads only.
  class ScopedUse {
   public:
    explicit ScopedUse(ThreadPool* pool);
    ~ScopedUse();
    ScopedUse(const ScopedUse&) = delete;
    ScopedUse& operator=(const ScopedUse&) = delete;

   private:
    ThreadPool* prev_;
  };

 private:
  void worker_loop(int index);
  void run_chunks(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::mutex call_mu_;  // serialises parallel_for calls from different threads
  std::condition_variable cv_start_, cv_done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  // Current job.
  const std::function<void(int64_t, int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace locr
