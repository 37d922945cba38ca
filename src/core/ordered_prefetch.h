// OrderedPrefetch: items 0 .. n-1 made ahead of use by threads of their own and handed to any
// number of consumer threads in index order, with at most `ahead` items made (or being made) and
// not yet taken. `locr ocr` renders its pages (PDF pages, decoded image files) this way, so a
// worker that finishes a page takes the next one ready instead of rendering it while the engine
// waits.
//
// make(i) may throw: the exception is handed to whoever takes item i (make is not called again
// for it). make is called from up to `threads` threads at once, for distinct i. The destructor
// stops making items (those being made are finished) and joins the threads, so consumers may stop
// taking at any time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace locr {

template <class T>
class OrderedPrefetch {
 public:
  struct Item {
    size_t index = 0;
    T value{};
    std::exception_ptr error;  // what make(index) threw, else null
  };

  OrderedPrefetch(size_t n, size_t ahead, int threads, std::function<T(size_t)> make)
      : n_(n), ahead_(ahead < 1 ? 1 : ahead), make_(std::move(make)) {
    const int t = threads < 1 ? 1 : threads;
    for (int i = 0; i < t; ++i) threads_.emplace_back([this] { run(); });
  }
  ~OrderedPrefetch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    room_.notify_all();
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  OrderedPrefetch(const OrderedPrefetch&) = delete;
  OrderedPrefetch& operator=(const OrderedPrefetch&) = delete;

  // The next item in index order, waiting until it is made; false once all n have been taken.
  bool next(Item* out) {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return taken_ == n_ || stop_ || made_.count(taken_) > 0; });
    const auto it = made_.find(taken_);
    if (it == made_.end()) return false;
    *out = std::move(it->second);
    made_.erase(it);
    ++taken_;
    room_.notify_all();
    return true;
  }

  // The most items made or being made and not yet taken at any moment so far (for tests).
  size_t peak_ahead() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }

 private:
  void run() {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu_);
        room_.wait(lock, [&] { return stop_ || next_ >= n_ || next_ < taken_ + ahead_; });
        if (stop_ || next_ >= n_) return;
        i = next_++;
        peak_ = next_ - taken_ > peak_ ? next_ - taken_ : peak_;
      }
      Item item;
      item.index = i;
      try {
        item.value = make_(i);
      } catch (...) {
        item.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        made_.emplace(i, std::move(item));
      }
      ready_.notify_all();
    }
  }

  const size_t n_, ahead_;
  std::function<T(size_t)> make_;
  mutable std::mutex mu_;
  std::condition_variable room_, ready_;
  std::map<size_t, Item> made_;  // made, not yet taken
  size_t next_ = 0;              // the next index to make
  size_t taken_ = 0;             // the next index to hand out
  size_t peak_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace locr
