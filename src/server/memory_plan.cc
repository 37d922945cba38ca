#include "server/memory_plan.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "model/memory_sizing.h"

namespace locr::server {

int64_t parse_size(const std::string& s, const std::string& what) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  char* end = nullptr;
  const std::string number = s.substr(0, i);
  const double v = std::strtod(number.c_str(), &end);
  if (i == 0 || *end || !(v >= 0))
    fail(ErrorKind::kInvalidArgument, what, " expects a size like 4GiB or 536870912, got '", s, "'");
  std::string unit = s.substr(i);
  while (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  double mul = 1;
  const char* binary[] = {"K", "M", "G", "T"};
  const char* binary_i[] = {"KiB", "MiB", "GiB", "TiB"};
  const char* decimal[] = {"kB", "MB", "GB", "TB"};
  const char* decimal_l[] = {"k", "m", "g", "t"};
  bool ok = unit.empty() || unit == "B";
  for (int k = 0; k < 4 && !ok; ++k) {
    if (unit == binary[k] || unit == binary_i[k]) mul = std::pow(1024.0, k + 1), ok = true;
    else if (unit == decimal[k] || unit == decimal_l[k] || unit == std::string(decimal[k]).substr(0, 1) + "b")
      mul = std::pow(1000.0, k + 1), ok = true;
  }
  if (!ok) fail(ErrorKind::kInvalidArgument, what, ": unknown size unit '", unit, "' in '", s, "' (use KiB, MiB, GiB)");
  return static_cast<int64_t>(v * mul);
}

int64_t mem_total_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  fail(ErrorKind::kIo, "cannot read MemTotal from /proc/meminfo; give --kv-cache-memory instead");
}

int64_t weight_bytes(const std::string& model_dir) {
  int64_t total = 0;
  std::error_code ec;
  if (std::filesystem::is_regular_file(model_dir, ec)) return static_cast<int64_t>(std::filesystem::file_size(model_dir, ec));
  for (const auto& e : std::filesystem::directory_iterator(model_dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".safetensors") total += static_cast<int64_t>(e.file_size());
  return total;
}

MemoryPlan plan_memory(const model::Model& m, const runtime::EngineOptions& opts, const std::string& model_dir,
                       double utilization, int64_t kv_cache_memory) {
  MemoryPlan p;
  p.weight_bytes = weight_bytes(model_dir) + m.extra_weight_bytes();
  p.activation_bytes = m.activation_bytes(opts.max_num_batched_tokens, opts.max_num_seqs);
  p.state_bytes = m.state_bytes_per_sequence() * opts.max_num_seqs;
  if (kv_cache_memory >= 0) {
    p.kv_bytes = kv_cache_memory;
  } else {
    if (!(utilization > 0 && utilization <= 1))  // before reading /proc/meminfo
      fail(ErrorKind::kInvalidArgument, "--gpu-memory-utilization must be in (0, 1], got ", utilization);
    p.mem_total = mem_total_bytes();
    p.kv_bytes = model::kv_bytes_for_utilization(utilization, p.mem_total, p.weight_bytes + p.state_bytes,
                                                 p.activation_bytes, "RAM");
  }
  const int64_t per_block = m.kv_bytes_per_block(opts.block_size);
  const int64_t blocks_needed = model::kv_blocks_cap(opts.max_num_seqs, opts.max_model_len, opts.block_size);
  if (p.kv_bytes > blocks_needed * per_block) {
    p.kv_bytes = blocks_needed * per_block;
    p.capped = true;
  }
  const int64_t min_bytes = ((opts.max_model_len + opts.block_size - 1) / opts.block_size) * per_block;
  if (p.kv_bytes < min_bytes)
    fail(ErrorKind::kLimit, "the KV cache (", p.kv_bytes >> 20, " MiB) cannot hold one sequence of --max-model-len ",
         opts.max_model_len, " tokens (", min_bytes >> 20, " MiB); lower --max-model-len or give more memory");
  return p;
}

std::string MemoryPlan::explain() const {
  std::ostringstream os;
  os << "KV cache " << (kv_bytes >> 20) << " MiB";
  if (mem_total > 0)
    os << " (from " << (mem_total >> 20) << " MiB RAM x utilization - " << (weight_bytes >> 20) << " MiB weights - "
       << (activation_bytes >> 20) << " MiB activation estimate"
       << (state_bytes > 0 ? " - " + std::to_string(state_bytes >> 20) + " MiB recurrent state" : std::string()) << ")";
  if (mem_total == 0 && state_bytes > 0) os << " beside " << (state_bytes >> 20) << " MiB recurrent state";
  if (capped) os << ", capped at 2 x max_num_seqs x max_model_len tokens";
  return os.str();
}

}  // namespace locr::server
