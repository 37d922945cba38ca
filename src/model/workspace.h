// Activations of the forward pass in preallocated backend memory (kernels::Ops::alloc): one buffer
// per named slot, grown when a step needs more and otherwise reused, so the pointers a step sees
// stay fixed from one step to the next (what a captured CUDA graph replays against). A buffer that
// grows is a new allocation; generation() counts those, so an executor knows when its captured
// graphs point at freed memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/ops.h"

namespace locr::model {

class Workspace {
 public:
  explicit Workspace(kernels::Ops& ops) : ops_(ops) {}
  // Slot `slot`'s buffer with room for at least n floats.
  float* f32(int slot, int64_t n);
  // The same as a contiguous F32 view [rows, cols].
  kernels::View view(int slot, int64_t rows, int64_t cols) { return ops_.f32(f32(slot, rows * cols), rows, cols); }
  uint64_t generation() const { return generation_; }
  // Bytes held over all slots.
  int64_t bytes() const;

 private:
  struct Buf {
    std::shared_ptr<void> p;
    int64_t n = 0;
  };
  kernels::Ops& ops_;
  std::vector<Buf> bufs_;
  uint64_t generation_ = 0;
};

}  // namespace locr::model
