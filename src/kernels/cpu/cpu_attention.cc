// The CPU backend's attention driver: splits the heads, query blocks or key chunks over the
// global ThreadPool and hands them to the per-ISA leaf kernels (kernel_table.h). Decode and
// verification rows take the per-row path (keys split into chunks, merged per row); prompt rows and
// the vision encoders take the tiles, on f32 FMA, on vdpbf16ps or (bidirectional) on fp16 products.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/cpu_driver.h"
#include "kernels/cpu/kernel_table.h"

namespace locr::kernels::cpu {

namespace {

// AttnArgs of p over F32 rows q, k, v (k and v interleaved by kv head in their rows) and out; the
// paths add their own fields.
AttnArgs args_for(const float* q, const float* k, const float* v, float* out, const AttentionParams& p) {
  AttnArgs a{};
  a.q = q;
  a.k = k;
  a.v = v;
  a.out = out;
  a.n_q = p.n_q;
  a.n_kv = p.n_kv;
  a.n_heads = p.n_heads;
  a.n_kv_heads = p.n_kv_heads;
  a.head_dim = p.head_dim;
  a.q_stride = p.q_stride;
  a.kv_stride = p.kv_stride;
  a.out_stride = p.out_stride;
  a.q_offset = p.q_offset;
  a.kv_head_stride = p.head_dim;
  a.scale = p.scale;
  a.causal = p.causal;
  return a;
}

// Every (query head, block of bq query rows) through `tile`, with the per-thread tile scratch.
void run_tiles(const KernelTable& t, void (*tile)(const AttnArgs&, int64_t, int64_t, float*), int64_t bq,
               const AttnArgs& a) {
  ThreadPool& pool = ThreadPool::global();
  const int64_t qblocks = ceil_div(a.n_q, bq);
  const size_t per = static_cast<size_t>(cpu::attn_tile_scratch(t, a.head_dim));
  float* sc = static_cast<float*>(scratch_slot(1).get(per * 4 * pool.size()));
  pool.parallel_for(a.n_heads * qblocks, 1, [&](int64_t b, int64_t e, int thread) {
    for (int64_t task = b; task < e; ++task) tile(a, task / qblocks, task % qblocks * bq, sc + per * thread);
  });
}

// The power of two 2^e with x * 2^e in [2^(top - 1), 2^top) (1 for x = 0); false when x is not
// finite or e would leave [-60, 60] (magnitudes no activation has: the caller then takes another tile).
bool pow2_scale(float x, int top, float* scale) {
  if (!std::isfinite(x)) return false;
  if (x == 0.0f) {
    *scale = 1.0f;
    return true;
  }
  int e = 0;
  std::frexp(x, &e);  // x in [2^(e - 1), 2^e)
  if (top - e < -60 || top - e > 60) return false;
  *scale = std::ldexp(1.0f, top - e);
  return true;
}

// The bidirectional tiles on fp16 products (t.attn_tile_f16: head_dim a multiple of 32 up to 128,
// F32 rows, no block table). First the largest |q|, |k| and |v| of the call give powers of two that
// keep every fp16 sum in range (kernels_avx512_fp16.cc); false, with nothing written, when an input
// is not finite or out of those scales' reach (the caller then takes the f32 or bf16 tiles, which
// propagate NaN and infinity as they always have).
bool attention_f16(const KernelTable& t, const float* q, const float* k, const float* v, float* out,
                   const AttentionParams& p) {
  ThreadPool& pool = ThreadPool::global();
  const int64_t hd = p.head_dim, qw = p.n_heads * hd, kw = p.n_kv_heads * hd;
  // max |q|, max |k|, max |v|, per thread then together (NaN where one is not finite).
  auto fold = [](float& acc, float m) { acc = std::isnan(m) || std::isnan(acc) ? NAN : std::max(acc, m); };
  std::vector<float> part(static_cast<size_t>(3 * pool.size()), 0.0f);
  pool.parallel_for(std::max(p.n_q, p.n_kv), 64, [&](int64_t b, int64_t e, int thread) {
    float* r = part.data() + 3 * thread;
    if (b < p.n_q) fold(r[0], t.absmax_rows(q, p.q_stride, b, std::min(e, p.n_q), qw));
    if (b < p.n_kv) {
      fold(r[1], t.absmax_rows(k, p.kv_stride, b, std::min(e, p.n_kv), kw));
      fold(r[2], t.absmax_rows(v, p.kv_stride, b, std::min(e, p.n_kv), kw));
    }
  });
  float qm = 0, km = 0, vm = 0;
  for (int i = 0; i < pool.size(); ++i) {
    fold(qm, part[3 * i]);
    fold(km, part[3 * i + 1]);
    fold(vm, part[3 * i + 2]);
  }
  if (std::isnan(qm) || std::isnan(km) || std::isnan(vm)) return false;
  // |q|, |k| < 2^4 (a QK^T sum of at most 128 products < 2^15) and |v| < 2^5 (with P < 2^4 and 64
  // keys a PV sum < 2^15): fp16 holds 65504.
  const float qs = p.scale * 1.44269504088896341f;
  float cq = 1, ck = 1, cv = 1;
  if (!pow2_scale(qm * qs, 4, &cq) || !pow2_scale(km, 4, &ck) || !pow2_scale(vm, 5, &cv)) return false;
  AttnArgs a = args_for(q, k, v, out, p);
  a.f16_q_scale = qs * cq;
  a.f16_s_unscale = 1.0f / (cq * ck);  // powers of two: exact
  a.f16_v_unscale = 1.0f / cv;
  const int64_t per_head = p.n_kv * hd;
  auto* kd = static_cast<uint32_t*>(scratch_slot(4).get(static_cast<size_t>(p.n_kv_heads * per_head) * 8 + 64));
  uint32_t* vd = kd + p.n_kv_heads * per_head;
  constexpr int64_t kRows = 64;
  const int64_t chunks = ceil_div(p.n_kv, kRows);
  pool.parallel_for(p.n_kv_heads * chunks, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t task = b; task < e; ++task) {
      const int64_t kh = task / chunks, j0 = task % chunks * kRows;
      t.attn_pack_f16(k + kh * hd, v + kh * hd, p.kv_stride, hd, j0, std::min(p.n_kv, j0 + kRows), ck, cv,
                      kd + kh * per_head, vd + kh * per_head);
    }
  });
  a.kh16 = kd;
  a.vh16 = vd;
  run_tiles(t, t.attn_tile_f16, t.attn_bq, a);
  return true;
}

}  // namespace

bool attention_f16_applies(const KernelTable& t, const AttentionParams& p) {
  return t.attn_tile_f16 != nullptr && t.absmax_rows != nullptr && !p.causal && p.kv_dtype == DType::kF32 &&
         p.block_table == nullptr && p.head_dim % 32 == 0 && p.head_dim <= 128 && t.attn_bq == 64 && p.n_kv > 0 &&
         (p.n_q > kAttnRowsMaxQ || p.prompt_rows);  // rows the other tiles would take
}

void attention(const KernelTable& t, bool dot_tile, bool f16_tile, const float* q, const void* k_rows,
               const void* v_rows, float* out, const AttentionParams& p) {
  if (f16_tile && attention_f16_applies(t, p) &&
      attention_f16(t, q, static_cast<const float*>(k_rows), static_cast<const float*>(v_rows), out, p))
    return;
  const bool kv_bf16 = p.kv_dtype == DType::kBF16, kv_fp8 = p.kv_dtype == DType::kF8E4M3;
  // Typed views; only the one matching kv_dtype is dereferenced.
  const auto* k = static_cast<const float*>(k_rows);
  const auto* v = static_cast<const float*>(v_rows);
  const auto* k16 = static_cast<const uint16_t*>(k_rows);
  const auto* v16 = static_cast<const uint16_t*>(v_rows);
  const auto* k8 = static_cast<const uint8_t*>(k_rows);
  const auto* v8 = static_cast<const uint8_t*>(v_rows);
  AttnArgs a = args_for(q, k, v, out, p);
  a.kv_bf16 = kv_bf16;
  a.kv_fp8 = kv_fp8;
  a.k_scale = p.k_scale;
  a.v_scale = p.v_scale;
  ThreadPool& pool = ThreadPool::global();
  if (p.n_q <= kAttnRowsMaxQ && !p.prompt_rows) {
    // Split the keys into chunks (several per thread for balance), then merge per query row.
    // A paged cache is read through its block table inside the kernel, so chunks span blocks.
    // Each row's chunks follow from the keys that row sees alone, so a row gives the same bits
    // as a one-row decode at its position: the rows of a speculative verification step equal
    // the decode steps they stand for. A prompt's rows take the tiles below however few they
    // are: in a tile a row's bits depend only on the keys it sees (key blocks of a fixed size
    // from key 0, masked probabilities exactly 0), so a prompt gives the same bits at once, in
    // chunks or after a cached prefix.
    a.block_table = p.block_table;
    a.block_size = p.block_size;
    const int64_t threads = pool.size();
    auto visible = [&](int64_t i) {
      return std::max<int64_t>(1, p.causal ? std::min(p.n_kv, p.q_offset + i + 1) : p.n_kv);
    };
    auto chunk_of = [&](int64_t i) { return std::clamp<int64_t>(ceil_div(visible(i), 4 * threads), 32, 1024); };
    int64_t n_chunks = 1, max_chunk = 32;
    for (int64_t i = 0; i < p.n_q; ++i) {
      n_chunks = std::max(n_chunks, ceil_div(visible(i), chunk_of(i)));
      max_chunk = std::max(max_chunk, chunk_of(i));
    }
    const int64_t po_row = n_chunks * p.n_heads * p.head_dim, pml_row = n_chunks * p.n_heads * 2;
    const size_t per = static_cast<size_t>(p.n_heads * max_chunk + 16);
    float* sc =
        static_cast<float*>(scratch_slot(1).get((per * threads + static_cast<size_t>(p.n_q * (po_row + pml_row))) * 4));
    float* po = sc + per * threads;    // [n_q][n_chunks][n_heads][head_dim]
    float* pml = po + p.n_q * po_row;  // [n_q][n_chunks][n_heads][2]
    // A task is one chunk of keys for every row in turn: the rows of a verification step (which
    // see nearly the same keys) read the chunk from DRAM once and then from this core's cache.
    // Each (row, chunk) is computed alone as before, so the bits do not depend on the rows.
    pool.parallel_for(n_chunks, 1, [&](int64_t b, int64_t e, int thread) {
      for (int64_t c = b; c < e; ++c)
        for (int64_t i = 0; i < p.n_q; ++i) {
          const int64_t chunk = chunk_of(i);
          if (c >= ceil_div(visible(i), chunk)) continue;  // past this row's keys
          t.attn_chunk(a, i, c * chunk, (c + 1) * chunk, po + i * po_row + c * p.n_heads * p.head_dim,
                       pml + i * pml_row + c * p.n_heads * 2, sc + per * thread);
        }
    });
    for (int64_t i = 0; i < p.n_q; ++i)
      t.attn_combine(a, i, ceil_div(visible(i), chunk_of(i)), po + i * po_row, pml + i * pml_row);
    return;
  }
  // Rows of K and V with several heads interleaved lie kv_stride floats apart (4 KB for 8 heads
  // of 128): a block of keys of one head then maps onto a handful of L1 sets and thrashes. Copy
  // them head-major once ([kv_head][n_kv][head_dim]); the copy is O(n_kv) next to O(n_q n_kv).
  // It and the bf16 packing below live in scratch kept from call to call: fresh buffers of tens of
  // MB per layer cost their page faults again at every call.
  // dot_tile: the tiles run on bf16 pairs, over K and V packed per kv head (from the rows as they
  // are when they are f32, else from the copy below). Every prompt row takes a tile, so a cached
  // prompt still gives the bits of a computed one.
  // A paged cache is gathered through its block table, and a BF16 or FP8 one widened (FP8 times
  // its scale), in the same copy.
  a.kv_bf16 = false;
  a.kv_fp8 = false;
  if ((p.block_table || kv_bf16 || kv_fp8 || (!dot_tile && p.kv_stride != p.head_dim)) && p.n_kv > 0) {
    const int64_t per_head = p.n_kv * p.head_dim;
    float* kc = static_cast<float*>(scratch_slot(3).get(static_cast<size_t>(2 * p.n_kv_heads * per_head) * 4));
    float* vc = kc + p.n_kv_heads * per_head;
    pool.parallel_for(p.n_kv, 64, [&](int64_t b, int64_t e, int) {
      for (int64_t j = b; j < e; ++j)
        for (int64_t kh = 0; kh < p.n_kv_heads; ++kh) {
          const int64_t row = p.kv_row(j), src = row * p.kv_stride + kh * p.head_dim;
          float* kd = kc + kh * per_head + j * p.head_dim;
          float* vd = vc + kh * per_head + j * p.head_dim;
          if (kv_fp8) {
            const float ks = p.k_scale[row * p.n_kv_heads + kh], vs = p.v_scale[row * p.n_kv_heads + kh];
            t.fp8_to_f32(k8 + src, kd, p.head_dim);
            t.fp8_to_f32(v8 + src, vd, p.head_dim);
            for (int64_t d = 0; d < p.head_dim; ++d) {
              kd[d] *= ks;
              vd[d] *= vs;
            }
          } else if (kv_bf16) {
            t.bf16_to_f32(k16 + src, kd, p.head_dim);
            t.bf16_to_f32(v16 + src, vd, p.head_dim);
          } else {
            std::memcpy(kd, k + src, p.head_dim * 4);
            std::memcpy(vd, v + src, p.head_dim * 4);
          }
        }
    });
    a.k = kc;
    a.v = vc;
    a.kv_stride = p.head_dim;
    a.kv_head_stride = per_head;
  }
  if (dot_tile) {
    a.hd_pad = (p.head_dim + 31) / 32 * 32;
    a.n_kv_pad = (p.n_kv + 1) / 2 * 2;
    const int64_t per_head = a.n_kv_pad * a.hd_pad;
    auto* kb = static_cast<uint16_t*>(scratch_slot(4).get(static_cast<size_t>(2 * p.n_kv_heads * per_head) * 2 + 64));
    uint16_t* vb = kb + p.n_kv_heads * per_head;
    constexpr int64_t kRows = 64;  // even: a task's rows start a V pair
    const int64_t chunks = ceil_div(a.n_kv_pad, kRows);
    pool.parallel_for(p.n_kv_heads * chunks, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t task = b; task < e; ++task) {
        const int64_t kh = task / chunks, j0 = task % chunks * kRows;
        t.attn_pack_bf16(a.k + kh * a.kv_head_stride, a.v + kh * a.kv_head_stride, a.kv_stride, p.head_dim, a.hd_pad,
                         j0, std::min(a.n_kv_pad, j0 + kRows), p.n_kv, kb + kh * per_head, vb + kh * per_head);
      }
    });
    a.kb = kb;
    a.vb = vb;
  }
  run_tiles(t, dot_tile ? t.attn_tile_bf16 : t.attn_tile, dot_tile ? t.attn_bq_dot : t.attn_bq, a);
}

}  // namespace locr::kernels::cpu
