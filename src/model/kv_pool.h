// The paged KV cache both families' decoders attend over: KvPool, the keys and values of every
// sequence's blocks per layer in the kernel backend's memory, and KvCache, one sequence with its
// own small pool. LightOnOCR-2's Qwen3 decoder (model/lightonocr/text_decoder.h) uses every layer;
// Qwen3.5 its full-attention layers only (model/qwen35/decoder.h: make_kv_pool, kv_shape).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"
#include "model/text_config.h"

namespace locr::model {

// Paged KV storage for all sequences: per layer, a pool of n_blocks * block_size rows of
// [n_kv_heads * head_dim] keys (post norm, post RoPE) and values. Which rows belong to which
// sequence is the block table's business (runtime/block_manager.h). Memory is reserved up front
// and committed by the OS as rows are first written.
// Rows are F32, or BF16 when the kernel backend asks for it (Ops::kv_dtype): half the memory and
// half the bytes that decode attention streams per token. With --kv-cache-dtype fp8 they are
// FP8 E4M3 with one f32 scale per row and kv head beside them (k_scale / v_scale, [rows,
// n_kv_heads]): each head's 128 values are divided by amax / 448 before rounding, so every head
// of every token uses E4M3's full range (docs/numerics.md, "FP8 KV cache").
class KvPool {
 public:
  // `ops`, when given, owns the memory (kernels::Ops::alloc: device memory for a device backend);
  // otherwise the pool is host memory.
  KvPool(const TextConfig& cfg, int64_t n_blocks, int block_size, DType dtype = DType::kF32,
         kernels::Ops* ops = nullptr);
  int block_size() const { return block_size_; }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t row_width() const { return width_; }
  DType dtype() const { return dtype_; }
  const void* k(int layer) const { return k_[layer].get(); }
  const void* v(int layer) const { return v_[layer].get(); }
  // F8_E4M3 pools: the per (row, kv head) scales; null otherwise.
  const float* k_scale(int layer) const { return k_scale_.empty() ? nullptr : static_cast<float*>(k_scale_[layer].get()); }
  const float* v_scale(int layer) const { return v_scale_.empty() ? nullptr : static_cast<float*>(v_scale_[layer].get()); }
  // Writes one position's keys and values (F32 [row_width] each) into pool row `slot`, rounding
  // to nearest even when the pool is BF16 or FP8 (then with each head's scale). Host pools only;
  // the forward pass stores through kernels::Ops::kv_store.
  void store(int layer, int64_t slot, const float* k, const float* v);
  // Layer `layer` as the kernels see it.
  kernels::KvLayer layer(int layer) const;
  // Bytes per block over all layers (keys and values, and the FP8 scales).
  static int64_t bytes_per_block(const TextConfig& cfg, int block_size, DType dtype = DType::kF32);

 private:
  int64_t n_blocks_;
  int block_size_;
  int64_t width_;
  int64_t n_kv_heads_, head_dim_;
  DType dtype_;
  std::vector<std::shared_ptr<void>> k_, v_;
  std::vector<std::shared_ptr<void>> k_scale_, v_scale_;  // F8_E4M3 only
};

// A single sequence with its own small pool and an identity block table (CLI use).
class KvCache {
 public:
  KvCache(const TextConfig& cfg, int64_t capacity, int block_size = 16, DType dtype = DType::kF32);
  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  KvPool& pool() { return pool_; }
  const int32_t* table() const { return table_.data(); }
  void set_size(int64_t n) { size_ = n; }

 private:
  int64_t capacity_, size_ = 0;
  KvPool pool_;
  std::vector<int32_t> table_;
};

}  // namespace locr::model
