#include "server/decode_budget.h"

#include <algorithm>

namespace locr::server {

DecodeBudget::Lease::Lease(DecodeBudget& b, int64_t bytes)
    : budget_(b), bytes_(std::clamp<int64_t>(bytes, 0, b.capacity_)) {
  std::unique_lock<std::mutex> lock(b.mu_);
  b.cv_.wait(lock, [&] { return b.used_ + bytes_ <= b.capacity_; });
  b.used_ += bytes_;
}

DecodeBudget::Lease::~Lease() {
  {
    std::lock_guard<std::mutex> lock(budget_.mu_);
    budget_.used_ -= bytes_;
  }
  budget_.cv_.notify_all();
}

int64_t DecodeBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

int64_t DecodeBudget::estimate(int64_t width, int64_t height) {
  const int64_t resized_w = std::min<int64_t>(width, 1540);
  return width * height * 4 + height * resized_w * 3;
}

}  // namespace locr::server
