// `locr perf --profile-ops`: the time of each stage op by op (kernels::ProfiledOps), summed over the
// repetitions and printed per repetition, with each row's GFLOP/s (matmul, attention) or GB/s
// (element-wise ops) and its share of the stage; "host and other" is the stage's wall time that no
// op accounts for (preparing inputs, copies, sampling).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/op_profile.h"

namespace locr::app {

class PerfOpProfile {
 public:
  // Records nothing unless `ops` is a kernels::ProfiledOps.
  explicit PerfOpProfile(kernels::Ops& ops) : ops_(dynamic_cast<kernels::ProfiledOps*>(&ops)) {}
  bool enabled() const { return ops_ != nullptr; }

  // Call before a stage's timed work (drops what ran in between), then after it with its wall time.
  void begin();
  void end(const std::string& stage, double wall_s);

  void print(int repeat) const;
  nlohmann::ordered_json to_json(int repeat) const;

 private:
  struct Stage {
    std::string name;
    double wall_s = 0;
    std::map<std::pair<std::string, std::string>, kernels::OpStat> ops;
    std::vector<kernels::OpStat> sorted() const;
  };
  kernels::ProfiledOps* ops_;
  std::vector<Stage> stages_;  // in first-run order
};

}  // namespace locr::app
