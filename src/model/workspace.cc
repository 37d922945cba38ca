#include "model/workspace.h"

#include <algorithm>

namespace locr::model {

float* Workspace::f32(int slot, int64_t n) {
  if (slot >= static_cast<int>(bufs_.size())) bufs_.resize(slot + 1);
  Buf& b = bufs_[slot];
  if (b.n < n) {
    b.p.reset();  // free the old buffer before taking the larger one
    b.p = ops_.alloc(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float));
    b.n = n;
    ++generation_;
  }
  return static_cast<float*>(b.p.get());
}

int64_t Workspace::bytes() const {
  int64_t total = 0;
  for (const Buf& b : bufs_) total += b.n * static_cast<int64_t>(sizeof(float));
  return total;
}

}  // namespace locr::model
