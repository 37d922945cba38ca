// Small helpers shared by the post-processing files (internal).
#pragma once

#include <cstddef>
#include <string_view>

namespace locr::runtime::detail {

// Whether s[i..] starts with `lower`, ASCII case-insensitively.
inline bool ieq_at(std::string_view s, size_t i, std::string_view lower) {
  if (i + lower.size() > s.size()) return false;
  for (size_t k = 0; k < lower.size(); ++k) {
    char c = s[i + k];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (c != lower[k]) return false;
  }
  return true;
}

}  // namespace locr::runtime::detail
