#include "apps/perf_op_profile.h"

#include <algorithm>
#include <cstdio>

namespace locr::app {

void PerfOpProfile::begin() {
  if (ops_) ops_->reset();
}

void PerfOpProfile::end(const std::string& stage, double wall_s) {
  if (!ops_) return;
  auto it = std::find_if(stages_.begin(), stages_.end(), [&](const Stage& s) { return s.name == stage; });
  if (it == stages_.end()) {
    stages_.push_back({stage, 0, {}});
    it = stages_.end() - 1;
  }
  it->wall_s += wall_s;
  for (const kernels::OpStat& o : ops_->stats()) {
    kernels::OpStat& d = it->ops[{o.op, o.shape}];
    if (d.calls == 0) {
      d.op = o.op;
      d.shape = o.shape;
    }
    d.calls += o.calls;
    d.seconds += o.seconds;
    d.flops += o.flops;
    d.bytes += o.bytes;
  }
  ops_->reset();
}

std::vector<kernels::OpStat> PerfOpProfile::Stage::sorted() const {
  std::vector<kernels::OpStat> v;
  for (const auto& [key, o] : ops) v.push_back(o);
  std::stable_sort(v.begin(), v.end(), [](const kernels::OpStat& a, const kernels::OpStat& b) { return a.seconds > b.seconds; });
  return v;
}

namespace {

// "412 GFLOP/s" or "18.3 GB/s", or "" when the op counted neither.
std::string rate(const kernels::OpStat& o) {
  char buf[64] = "";
  if (o.seconds <= 0) return buf;
  if (o.flops > 0) std::snprintf(buf, sizeof buf, "%.0f GFLOP/s", o.flops / o.seconds / 1e9);
  else if (o.bytes > 0) std::snprintf(buf, sizeof buf, "%.1f GB/s", o.bytes / o.seconds / 1e9);
  return buf;
}

}  // namespace

void PerfOpProfile::print(int repeat) const {
  const double r = std::max(1, repeat);
  for (const Stage& s : stages_) {
    double op_s = 0;
    for (const auto& [key, o] : s.ops) op_s += o.seconds;
    std::printf("\nops of %s (per repetition; wall %.3f s)\n\n", s.name.c_str(), s.wall_s / r);
    std::printf("| op | shape | calls | time | share | rate |\n|---|---|---|---|---|---|\n");
    for (const kernels::OpStat& o : s.sorted())
      std::printf("| %s | %s | %.0f | %.4f s | %.1f%% | %s |\n", o.op.c_str(), o.shape.c_str(), o.calls / r,
                  o.seconds / r, s.wall_s > 0 ? 100 * o.seconds / s.wall_s : 0.0, rate(o).c_str());
    const double other = std::max(0.0, s.wall_s - op_s);
    std::printf("| host and other | | | %.4f s | %.1f%% | |\n", other / r, s.wall_s > 0 ? 100 * other / s.wall_s : 0.0);
  }
}

nlohmann::ordered_json PerfOpProfile::to_json(int repeat) const {
  const double r = std::max(1, repeat);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Stage& s : stages_) {
    nlohmann::ordered_json st;
    st["stage"] = s.name;
    st["wall_s"] = s.wall_s / r;
    st["ops"] = nlohmann::ordered_json::array();
    for (const kernels::OpStat& o : s.sorted())
      st["ops"].push_back({{"op", o.op},
                           {"shape", o.shape},
                           {"calls", o.calls / r},
                           {"seconds", o.seconds / r},
                           {"flops", o.flops / r},
                           {"bytes", o.bytes / r}});
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace locr::app
