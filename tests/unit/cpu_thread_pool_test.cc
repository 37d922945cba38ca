// ThreadPool: every index is visited exactly once, thread indices stay in range, and the pool
// survives both back-to-back calls (spinning workers) and idle gaps (sleeping workers).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace locr {
namespace {

void check_cover(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(n);
  std::atomic<int> bad_thread{0};
  pool.parallel_for(n, grain, [&](int64_t b, int64_t e, int t) {
    if (t < 0 || t >= pool.size()) bad_thread.fetch_add(1);
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  EXPECT_EQ(bad_thread.load(), 0);
}

TEST(CpuThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 12345})
      for (int64_t grain : {1, 3, 100}) check_cover(pool, n, grain);
  }
}

TEST(CpuThreadPool, ManyBackToBackCalls) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  for (int it = 0; it < 3000; ++it)
    pool.parallel_for(8, 1, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 3000 * 8);
}

TEST(CpuThreadPool, WakesAfterIdle) {
  ThreadPool pool(2);
  for (int it = 0; it < 3; ++it) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // past the spin budget
    check_cover(pool, 100, 1);
  }
}


// ThreadPool::ScopedUse: global() is the scope's pool on the constructing thread only, scopes nest,
// and kernels' parallel_for calls inside it run on that pool's threads.
TEST(ThreadPoolScopedUse, GlobalIsTheScopesPoolOnThisThreadOnly) {
  ThreadPool& process = ThreadPool::global();
  ThreadPool lane(3), inner(1);
  {
    ThreadPool::ScopedUse use(&lane);
    EXPECT_EQ(&ThreadPool::global(), &lane);
    ThreadPool* other = nullptr;
    std::thread([&] { other = &ThreadPool::global(); }).join();
    EXPECT_EQ(other, &process);
    {
      ThreadPool::ScopedUse nested(&inner);
      EXPECT_EQ(&ThreadPool::global(), &inner);
    }
    EXPECT_EQ(&ThreadPool::global(), &lane);
    std::atomic<int> max_thread{0};
    ThreadPool::global().parallel_for(64, 1, [&](int64_t, int64_t, int t) {
      int seen = max_thread.load();
      while (t > seen && !max_thread.compare_exchange_weak(seen, t)) {
      }
    });
    EXPECT_LT(max_thread.load(), lane.size());
    ThreadPool::ScopedUse none(nullptr);
    EXPECT_EQ(&ThreadPool::global(), &process);
  }
  EXPECT_EQ(&ThreadPool::global(), &process);
}

}  // namespace
}  // namespace locr
