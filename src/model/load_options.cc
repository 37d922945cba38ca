#include "model/load_options.h"

#include "kernels/op_profile.h"

namespace locr::model {

std::unique_ptr<kernels::Ops> make_model_ops(const LoadOptions& opts) {
  std::unique_ptr<kernels::Ops> ops = kernels::make_ops(opts.backend);
  if (opts.profile_ops) ops = std::make_unique<kernels::ProfiledOps>(std::move(ops));
  return ops;
}

}  // namespace locr::model
