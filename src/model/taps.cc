#include "model/taps.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"

namespace locr::model {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& name, const std::vector<std::string>& known) {
  std::vector<std::pair<size_t, std::string>> d;
  for (const auto& k : known) d.push_back({edit_distance(name, k), k});
  std::stable_sort(d.begin(), d.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (size_t i = 0; i < d.size() && i < 5; ++i) out += (i ? ", " : "") + d[i].second;
  return out;
}

}  // namespace

bool tap_glob_match(const std::string& p, const std::string& s) {
  size_t i = 0, j = 0, star = std::string::npos, mark = 0;
  while (j < s.size()) {
    if (i < p.size() && (p[i] == '?' || p[i] == s[j])) {
      ++i, ++j;
    } else if (i < p.size() && p[i] == '*') {
      star = i++;
      mark = j;
    } else if (star != std::string::npos) {
      i = star + 1;
      j = ++mark;
    } else {
      return false;
    }
  }
  while (i < p.size() && p[i] == '*') ++i;
  return i == p.size();
}

Taps Taps::select(const std::vector<std::string>& requested, const std::vector<std::string>& known) {
  std::set<std::string> chosen;
  Taps t;
  for (const auto& r : requested) {
    if (r.empty()) continue;
    const bool pattern = r.find_first_of("*?") != std::string::npos;
    if (!pattern) {
      if (std::find(known.begin(), known.end(), r) == known.end())
        fail(ErrorKind::kInvalidArgument, "unknown tap '", r, "'; closest: ", closest(r, known),
             " (--taps list prints them all)");
      chosen.insert(r);
      t.exact_.push_back(r);
      continue;
    }
    size_t hits = 0;
    for (const auto& k : known)
      if (tap_glob_match(r, k)) chosen.insert(k), ++hits;
    if (hits == 0) fail(ErrorKind::kInvalidArgument, "tap pattern '", r, "' matches no tap (--taps list prints them)");
  }
  if (chosen.empty()) fail(ErrorKind::kInvalidArgument, "no tap selected");
  for (const auto& k : known)
    if (chosen.count(k)) {
      t.order_.push_back(k);
      t.data_[k];
    }
  return t;
}

Taps::Buf* Taps::find(const char* scope, int layer, const char* site, int64_t cols) {
  std::string name = scope;
  if (layer >= 0) name += "." + std::to_string(layer);
  name += ".";
  name += site;
  auto it = data_.find(name);
  if (it == data_.end()) return nullptr;
  Buf& b = it->second;
  LOCR_CHECK(b.rows == 0 || b.cols == cols, "tap ", name, ": ", cols, " columns after ", b.cols);
  return &b;
}

void Taps::record(const char* scope, int layer, const char* site, const float* data, int64_t rows, int64_t cols) {
  Buf* b = find(scope, layer, site, cols);
  if (!b) return;
  b->cols = cols;
  b->rows += rows;
  b->v.insert(b->v.end(), data, data + rows * cols);
}

void Taps::record(kernels::Ops& ops, const char* scope, int layer, const char* site, const kernels::View& x) {
  Buf* b = find(scope, layer, site, x.cols);
  if (!b) return;
  LOCR_CHECK(x.dtype == DType::kF32, "tap of ", x.describe());
  const int64_t rows = x.rows, cols = x.cols;
  b->cols = cols;
  b->rows += rows;
  const size_t at = b->v.size();
  b->v.resize(at + static_cast<size_t>(rows * cols));
  if (x.contiguous()) {
    ops.to_host(b->v.data() + at, x.data, static_cast<size_t>(rows * cols) * sizeof(float));
    return;
  }
  // A column range of a wider buffer: the whole span in one copy, then its rows.
  std::vector<float> span(static_cast<size_t>(x.span()));
  ops.to_host(span.data(), x.data, span.size() * sizeof(float));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(span.data() + r * x.stride, cols, b->v.data() + at + static_cast<size_t>(r * cols));
}

std::vector<std::string> Taps::missing() const {
  std::vector<std::string> m;
  for (const auto& n : order_)
    if (data_.at(n).rows == 0) m.push_back(n);
  return m;
}

std::vector<std::pair<std::string, Tensor>> Taps::tensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& n : order_) {
    const Buf& b = data_.at(n);
    if (b.rows == 0) continue;
    Tensor t = Tensor::empty(DType::kF32, {b.rows, b.cols});
    std::memcpy(t.raw(), b.v.data(), b.v.size() * sizeof(float));
    out.push_back({n, std::move(t)});
  }
  return out;
}

}  // namespace locr::model
