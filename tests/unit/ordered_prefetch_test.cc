#include "core/ordered_prefetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace locr {
namespace {

using namespace std::chrono_literals;

// Waits (up to 5 s) until pred holds; the producers run on their own threads.
template <class F>
bool eventually(F pred) {
  for (int i = 0; i < 5000 && !pred(); ++i) std::this_thread::sleep_for(1ms);
  return pred();
}

TEST(OrderedPrefetch, HandsEveryItemOnceInOrderToManyConsumers) {
  constexpr size_t kN = 200;
  std::atomic<int> calls{0};
  OrderedPrefetch<size_t> pf(kN, 3, 3, [&](size_t i) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::microseconds((i * 37) % 200));  // finish out of order
    return i * i;
  });
  std::vector<std::vector<size_t>> seen(4);
  std::vector<std::thread> consumers;
  for (auto& s : seen)
    consumers.emplace_back([&pf, &s] {
      OrderedPrefetch<size_t>::Item item;
      while (pf.next(&item)) {
        EXPECT_FALSE(item.error);
        EXPECT_EQ(item.value, item.index * item.index);
        s.push_back(item.index);
      }
    });
  for (auto& t : consumers) t.join();
  std::vector<int> count(kN, 0);
  for (const auto& s : seen) {
    for (size_t k = 1; k < s.size(); ++k) EXPECT_LT(s[k - 1], s[k]) << "a consumer got items out of order";
    for (size_t i : s) ++count[i];
  }
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(count[i], 1) << "item " << i;
  EXPECT_EQ(calls.load(), static_cast<int>(kN));
  EXPECT_LE(pf.peak_ahead(), 3u);
}

TEST(OrderedPrefetch, MakesAheadUpToItsBoundAndNoFurther) {
  std::atomic<int> calls{0};
  OrderedPrefetch<int> pf(100, 4, 2, [&](size_t i) {
    ++calls;
    return static_cast<int>(i);
  });
  // Nobody takes: exactly `ahead` items are made, then the threads wait.
  ASSERT_TRUE(eventually([&] { return calls.load() == 4; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 4);
  OrderedPrefetch<int>::Item item;
  ASSERT_TRUE(pf.next(&item));
  EXPECT_EQ(item.index, 0u);
  // One taken: one more made.
  ASSERT_TRUE(eventually([&] { return calls.load() == 5; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 5);
  EXPECT_EQ(pf.peak_ahead(), 4u);
}

TEST(OrderedPrefetch, HandsMakesExceptionToTheTakerOfThatItem) {
  OrderedPrefetch<std::string> pf(20, 2, 2, [](size_t i) -> std::string {
    if (i % 7 == 3) throw std::runtime_error("page " + std::to_string(i) + " is damaged");
    return "page " + std::to_string(i);
  });
  OrderedPrefetch<std::string>::Item item;
  size_t n = 0;
  while (pf.next(&item)) {
    EXPECT_EQ(item.index, n++);
    if (item.index % 7 == 3) {
      ASSERT_TRUE(item.error);
      try {
        std::rethrow_exception(item.error);
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "page " + std::to_string(item.index) + " is damaged");
      }
    } else {
      EXPECT_FALSE(item.error);
      EXPECT_EQ(item.value, "page " + std::to_string(item.index));
    }
  }
  EXPECT_EQ(n, 20u);
}

TEST(OrderedPrefetch, StopsWhenDestroyedBeforeEverythingIsTaken) {
  std::atomic<int> calls{0};
  {
    OrderedPrefetch<int> pf(100000, 3, 2, [&](size_t i) {
      ++calls;
      std::this_thread::sleep_for(1ms);
      return static_cast<int>(i);
    });
    OrderedPrefetch<int>::Item item;
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(pf.next(&item));
  }  // joins without waiting for the rest
  EXPECT_LE(calls.load(), 5 + 3);
}

TEST(OrderedPrefetch, NoItems) {
  OrderedPrefetch<int> pf(0, 2, 2, [](size_t) -> int { throw std::logic_error("never called"); });
  OrderedPrefetch<int>::Item item;
  EXPECT_FALSE(pf.next(&item));
}

}  // namespace
}  // namespace locr
