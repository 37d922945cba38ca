#include "model/weight_binder.h"

#include <algorithm>

#include "core/error.h"

namespace locr::model {

kernels::Matrix WeightBinder::get(const std::string& name, std::vector<int64_t> shape) {
  if (!st_.has(name))
    fail(ErrorKind::kNotFound, "checkpoint is missing tensor '", name, "' (expected shape ", shape_to_string(shape),
         "); is this a ", family_, " checkpoint, complete and unmodified?");
  const io::TensorInfo& info = st_.info(name);
  std::vector<int64_t> got = info.shape;
  // Accept a conv kernel [out, c, ...] for a flattened [out, c * ...] expectation.
  if (shape.size() == 2 && got.size() >= 3 && got[0] == shape[0]) {
    int64_t inner = 1;
    for (size_t i = 1; i < got.size(); ++i) inner *= got[i];
    if (inner == shape[1]) got = shape;
  }
  if (got != shape)
    fail(ErrorKind::kInvalidArgument, "tensor '", name, "' has shape ", shape_to_string(info.shape), ", expected ",
         shape_to_string(shape), " from config.json; the checkpoint and its config do not match");
  if (info.dtype != DType::kF32 && info.dtype != DType::kBF16 && info.dtype != DType::kF16)
    fail(ErrorKind::kUnsupported, "tensor '", name, "' has dtype ", dtype_name(info.dtype),
         "; supported weight dtypes are BF16, F16 and F32");
  kernels::Matrix m =
      kernels::Matrix::from_tensor(st_.get(name).reshape(shape.size() == 1 ? std::vector<int64_t>{shape[0]} : shape));
  used_.insert(name);
  return m;
}

void WeightBinder::check_all_used() const {
  std::vector<std::string> unused;
  for (const std::string& n : st_.names())
    if (!used_.count(n)) unused.push_back(n);
  if (unused.empty()) return;
  std::sort(unused.begin(), unused.end());
  std::string list;
  for (size_t i = 0; i < unused.size() && i < 8; ++i)
    list += (i ? ", '" : "'") + unused[i] + "' " + shape_to_string(st_.info(unused[i]).shape);
  if (unused.size() > 8) list += ", ...";
  fail(ErrorKind::kUnsupported, "checkpoint tensor", unused.size() > 1 ? "s " : " ", list, " (", unused.size(),
       " in all) ", unused.size() > 1 ? "are" : "is", " not read by locr: a ", family_, " checkpoint has no such ",
       "tensor, and ignoring it would compute something else than the checkpoint describes");
}

}  // namespace locr::model
