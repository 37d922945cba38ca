#include "model/kv_pool.h"

#include <numeric>

#include "core/error.h"

namespace locr::model {

KvPool::KvPool(const TextConfig& cfg, int64_t n_blocks, int block_size, DType dtype, kernels::Ops* ops)
    : n_blocks_(n_blocks), block_size_(block_size),
      width_(static_cast<int64_t>(cfg.num_key_value_heads) * cfg.head_dim), n_kv_heads_(cfg.num_key_value_heads),
      head_dim_(cfg.head_dim), dtype_(dtype) {
  LOCR_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF8E4M3, "KV cache dtype ",
             dtype_name(dtype));
  const int64_t rows = n_blocks * block_size;
  auto take = [&](DType t, int64_t cols) {
    const size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(t);
    if (ops) return ops->alloc(bytes);
    auto host = std::make_shared<Tensor>(Tensor::empty(t, {rows, cols}));
    return std::shared_ptr<void>(host, host->raw());
  };
  for (int i = 0; i < cfg.num_hidden_layers; ++i) {
    k_.push_back(take(dtype, width_));
    v_.push_back(take(dtype, width_));
    if (dtype == DType::kF8E4M3) {
      k_scale_.push_back(take(DType::kF32, n_kv_heads_));
      v_scale_.push_back(take(DType::kF32, n_kv_heads_));
    }
  }
}

kernels::KvLayer KvPool::layer(int l) const {
  kernels::KvLayer kv;
  kv.dtype = dtype_;
  kv.k = k_[l].get();
  kv.v = v_[l].get();
  kv.k_scale = k_scale_.empty() ? nullptr : static_cast<float*>(k_scale_[l].get());
  kv.v_scale = v_scale_.empty() ? nullptr : static_cast<float*>(v_scale_[l].get());
  kv.n_kv_heads = n_kv_heads_;
  kv.head_dim = head_dim_;
  kv.rows = n_blocks_ * block_size_;
  return kv;
}

void KvPool::store(int l, int64_t slot, const float* k, const float* v) {
  const int32_t s = static_cast<int32_t>(slot);
  kernels::kv_store_host(k, width_, v, width_, &s, 1, layer(l));
}

int64_t KvPool::bytes_per_block(const TextConfig& cfg, int block_size, DType dtype) {
  int64_t per_head = static_cast<int64_t>(cfg.head_dim) * static_cast<int64_t>(dtype_size(dtype));
  if (dtype == DType::kF8E4M3) per_head += static_cast<int64_t>(sizeof(float));  // the head's scale
  return 2LL * cfg.num_hidden_layers * block_size * cfg.num_key_value_heads * per_head;
}

KvCache::KvCache(const TextConfig& cfg, int64_t capacity, int block_size, DType dtype)
    : capacity_(capacity), pool_(cfg, (capacity + block_size - 1) / block_size, block_size, dtype) {
  table_.resize(pool_.n_blocks());
  std::iota(table_.begin(), table_.end(), 0);
}

}  // namespace locr::model
