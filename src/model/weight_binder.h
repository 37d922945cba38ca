// Binding checkpoint tensors by name, shape-checked (what every architecture's load_weights uses):
// a missing tensor, a wrong shape or dtype, and any checkpoint tensor that no code reads are errors
// that name the tensor.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "io/safetensors.h"
#include "kernels/ops.h"

namespace locr::model {

class WeightBinder {
 public:
  // `family` names the checkpoint kind in messages ("LightOnOCR-2", "Qwen3.5").
  WeightBinder(const io::SafetensorsSet& st, std::string family) : st_(st), family_(std::move(family)) {}

  // The tensor `name` as a Matrix of `shape` ([rows, cols] or [n]). A conv kernel [out, c, ...]
  // is accepted for a flattened [out, c * ...] expectation. BF16, F16 or F32.
  kernels::Matrix get(const std::string& name, std::vector<int64_t> shape);
  kernels::Matrix vec(const std::string& name, int64_t n) { return get(name, {n}); }
  bool has(const std::string& name) const { return st_.has(name); }
  // Marks a tensor as read on purpose without binding it (weights the model does not use, such as
  // a multi-token-prediction head).
  void skip(const std::string& name) { used_.insert(name); }
  const io::SafetensorsSet& tensors() const { return st_; }

  // A tensor that no code reads would be silently ignored (a bias, an extra layer or norm of an
  // architecture variant): the model would not compute what the checkpoint describes.
  void check_all_used() const;

 private:
  const io::SafetensorsSet& st_;
  std::string family_;
  std::unordered_set<std::string> used_;
};

}  // namespace locr::model
