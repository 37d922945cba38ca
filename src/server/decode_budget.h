// The server-wide cap on memory used by image decoding at any one time (--max-decode-bytes): a
// counting semaphore of bytes. A request takes the estimated bytes of the image it is about to
// decode and gives them back once only the model-sized copy is left, so concurrent requests wait
// for each other (never fail) and cannot add up without bound. One decode larger than the whole
// cap is let through alone (it still has to pass the per-image and per-request pixel limits).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace locr::server {

class DecodeBudget {
 public:
  explicit DecodeBudget(int64_t capacity) : capacity_(capacity) {}

  // Blocks until `bytes` (clamped to the capacity) are free, then holds them until destroyed.
  class Lease {
   public:
    Lease(DecodeBudget& b, int64_t bytes);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

   private:
    DecodeBudget& budget_;
    int64_t bytes_;
  };

  int64_t capacity() const { return capacity_; }
  int64_t in_use() const;

  // What decoding a width x height image holds at its peak, roughly: RGB and alpha at full size
  // (4 bytes a pixel) plus the horizontally resized intermediate of the resize to the model size.
  static int64_t estimate(int64_t width, int64_t height);

 private:
  const int64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t used_ = 0;
};

}  // namespace locr::server
