#include "core/thread_pool.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

namespace locr {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {

// Spin budget before sleeping. The first kPauseIterations use the pause instruction (~10-40 ns
// each); after that each round yields the core, so that on an oversubscribed machine the thread
// we are waiting for gets to run instead of being starved by our spinning.
constexpr int kPauseIterations = 256;
constexpr int kSpinIterations = kPauseIterations + 64;

inline void cpu_relax(int i) {
  if (i >= kPauseIterations) {
    std::this_thread::yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

void ThreadPool::run_chunks(int thread) {
  for (;;) {
    const int64_t begin = next_.fetch_add(chunk_);
    if (begin >= n_) break;
    (*fn_)(begin, std::min(n_, begin + chunk_), thread);
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < kSpinIterations && generation_.load(std::memory_order_acquire) == seen &&
                    !stop_.load(std::memory_order_relaxed);
         ++i)
      cpu_relax(i);
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // pairs with the caller's predicate check
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // A nested call from inside a job runs inline: the workers are busy with the outer job.
  thread_local bool inside = false;
  if (n_threads_ == 1 || n <= grain || inside) {
    fn(0, n, 0);
    return;
  }
  // Callers on different threads (an engine thread and a CLI thread, say) take turns.
  std::lock_guard<std::mutex> turn(call_mu_);
  struct Inside {
    Inside() { inside = true; }
    ~Inside() { inside = false; }
  } mark;
  // About 4 chunks per thread balances uneven work without much scheduling cost.
  const int64_t chunk = std::max(grain, (n + 4 * n_threads_ - 1) / (4 * n_threads_));
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  next_.store(0);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  run_chunks(0);
  for (int i = 0; i < kSpinIterations && pending_.load(std::memory_order_acquire) != 0; ++i) cpu_relax(i);
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  fn_ = nullptr;
}

namespace {
thread_local ThreadPool* t_scoped_pool = nullptr;

std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
std::mutex g_global_mu;
}  // namespace

ThreadPool::ScopedUse::ScopedUse(ThreadPool* pool) : prev_(t_scoped_pool) { t_scoped_pool = pool; }
ThreadPool::ScopedUse::~ScopedUse() { t_scoped_pool = prev_; }

ThreadPool& ThreadPool::global() {
  if (t_scoped_pool) return *t_scoped_pool;
  std::lock_guard<std::mutex> lock(g_global_mu);
  auto& p = global_slot();
  if (!p) p = std::make_unique<ThreadPool>(default_threads());
  return *p;
}

void ThreadPool::set_global_threads(int n) {
  // Call once at start-up, before kernels run: the old pool is destroyed.
  std::lock_guard<std::mutex> lock(g_global_mu);
  auto& p = global_slot();
  if (n <= 0) n = default_threads();
  if (!p || p->size() != n) p = std::make_unique<ThreadPool>(n);
}

int ThreadPool::default_threads() {
  // Count distinct (physical id, core id) pairs; hyperthreads do not help these kernels.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") phys = val;
    if (key == "core id") cores.insert({phys, val});
  }
  int n = static_cast<int>(cores.size());
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, n);
}

}  // namespace locr
