#include "kernels/view.h"

#include <sstream>

#include "core/error.h"

namespace locr::kernels {

View View::cols_range(int64_t c0, int64_t n) const {
  LOCR_CHECK(c0 >= 0 && n >= 0 && c0 + n <= cols, "columns [", c0, ", ", c0 + n, ") of ", describe());
  View v = *this;
  v.data = static_cast<char*>(data) + static_cast<size_t>(c0) * dtype_size(dtype);
  v.cols = n;
  return v;
}

View View::rows_range(int64_t r0, int64_t n) const {
  LOCR_CHECK(r0 >= 0 && n >= 0 && r0 + n <= rows, "rows [", r0, ", ", r0 + n, ") of ", describe());
  View v = *this;
  v.data = static_cast<char*>(data) + static_cast<size_t>(r0 * stride) * dtype_size(dtype);
  v.rows = n;
  return v;
}

std::string View::describe() const {
  std::ostringstream s;
  s << dtype_name(dtype) << " [" << rows << ", " << cols << "]";
  if (!contiguous()) s << " stride " << stride;
  s << (memory == Memory::kHost ? ", host" : ", device");
  return s.str();
}

}  // namespace locr::kernels
