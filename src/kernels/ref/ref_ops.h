// The scalar reference backend: straightforward loops in f32 (f64 accumulation where it keeps the
// oracle closer to exact). Never optimised; every other backend is tested against it.
#pragma once

#include <memory>

#include "kernels/ops.h"

namespace locr::kernels {

std::unique_ptr<Ops> make_ref_ops();

}  // namespace locr::kernels
