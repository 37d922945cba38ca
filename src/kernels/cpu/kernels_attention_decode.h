// Attention leaf kernels of every ISA, few-query (decode) path: one query row against a chunk of
// keys for every head at once over F32, BF16 or FP8 keys and values, paged or not, and the merge
// of the chunks' partial results.

#pragma once

#include "kernels/cpu/kernels_common.h"
#include "kernels/cpu/kernels_elementwise.h"  // vexp, the dtype widening loads

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

// Keys/values are F32, BF16 (a BF16 KV cache) or FP8 E4M3 (an FP8 one, scaled per row and kv
// head); these load any of them as f32 vectors (FP8 as its value times 2^-8, without its scale:
// key_factor / value_factor put the 2^8 back, exactly).
inline vf vload_kv(const float* p) { return vload(p); }
inline vf vload_kv(const uint16_t* p) { return vload_bf16(p); }
inline vf vload_kv(const uint8_t* p) { return vload_fp8_lo(p); }
inline vf vload_kv_n(const float* p, int n) { return vload_n(p, n); }
inline vf vload_kv_n(const uint16_t* p, int n) { return vload_bf16_n(p, n); }
inline vf vload_kv_n(const uint8_t* p, int n) { return vload_fp8_lo_n(p, n); }

// Pool row of logical key j (through the block table when the cache is paged).
inline int64_t kv_row(const AttnArgs& a, int64_t j) {
  return a.block_table ? static_cast<int64_t>(a.block_table[j / a.block_size]) * a.block_size + j % a.block_size : j;
}

// Software prefetch of the K (V) row kKvAhead keys ahead of the one being read, head by head as
// the loops reach them. A paged row of every kv head is 2 KB for 8 BF16 heads of 128: left to the
// hardware prefetchers, a decode step's attention read its cache at half the rate of a plain read
// loop (the loads of one key waited on memory while the arithmetic of the last one ran).
constexpr int64_t kKvAhead = 4;

template <class T>
inline const char* row_ahead(const AttnArgs& a, const T* base, int64_t j, int64_t j1) {
  return j + kKvAhead < j1 ? reinterpret_cast<const char*>(base + kv_row(a, j + kKvAhead) * a.kv_stride) : nullptr;
}

// Head kh of a row from row_ahead (null past the chunk's end): its `bytes`, a line at a time.
template <class T>
inline void prefetch_head(const AttnArgs& a, const char* row, int64_t kh, int64_t bytes) {
  if (!row) return;
  const char* p = row + kh * a.kv_head_stride * static_cast<int64_t>(sizeof(T));
  for (int64_t l = 0; l < bytes; l += 64) __builtin_prefetch(p + l, 0, 3);
}

// The score scale of key head kh of pool row `row`: scale alone, or times the FP8 key scale and
// 2^8 (the dot product runs on the unscaled E4M3 values times 2^-8). Likewise the weight of a
// value row.
template <class T>
inline float key_factor(const AttnArgs& a, int64_t row, int64_t kh) {
  if constexpr (std::is_same_v<T, uint8_t>) return a.k_scale[row * a.n_kv_heads + kh] * 256.0f * a.scale;
  else return a.scale;
}
template <class T>
inline float value_factor(const AttnArgs& a, int64_t row, int64_t kh, float p) {
  if constexpr (std::is_same_v<T, uint8_t>) return p * (a.v_scale[row * a.n_kv_heads + kh] * 256.0f);
  else return p;
}

template <class T>
float dot_hd(const float* x, const T* y, int64_t hd) {
  vf acc0 = vzero(), acc1 = vzero();
  int64_t d = 0;
  for (; d + 2 * W <= hd; d += 2 * W) {
    acc0 = vfma(vload(x + d), vload_kv(y + d), acc0);
    acc1 = vfma(vload(x + d + W), vload_kv(y + d + W), acc1);
  }
  for (; d < hd; d += W) {
    const int n = static_cast<int>(min64(W, hd - d));
    acc0 = vfma(vload_n(x + d, n), vload_kv_n(y + d, n), acc0);
  }
  return vhsum(vadd(acc0, acc1));
}

// Any head_dim: s[h][j - j0] = q_h . k_j * scale, then o_h += p_hj v_j.
template <class T>
void chunk_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const T* k = reinterpret_cast<const T*>(a.k);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* kr = k + row * a.kv_stride;
    const char* ahead = row_ahead(a, k, j, j1);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      prefetch_head<T>(a, ahead, kh, hd * static_cast<int64_t>(sizeof(T)));
      const float f = key_factor<T>(a, row, kh);
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h)
        s[h * jn + (j - j0)] = dot_hd(qi + h * hd, kr + kh * a.kv_head_stride, hd) * f;
    }
  }
}

template <class T>
void chunk_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const T* v = reinterpret_cast<const T*>(a.v);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* vr = v + row * a.kv_stride;
    const char* ahead = row_ahead(a, v, j, j1);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      prefetch_head<T>(a, ahead, kh, hd * static_cast<int64_t>(sizeof(T)));
      const T* vh = vr + kh * a.kv_head_stride;
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
        const vf p = vset1(value_factor<T>(a, row, kh, s[h * jn + (j - j0)]));
        float* oh = o + h * hd;
        int64_t d = 0;
        for (; d + W <= hd; d += W) vstore(oh + d, vfma(p, vload_kv(vh + d), vload(oh + d)));
        if (d < hd) {
          const int n = static_cast<int>(hd - d);
          vstore_n(oh + d, vfma(p, vload_kv_n(vh + d, n), vload_n(oh + d, n)), n);
        }
      }
    }
  }
}

// BF16 or FP8 keys/values with head_dim = NV vectors: each key (value) head is widened once into
// registers and used by every query head of its GQA group.
template <class T, int NV>
void narrow_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = NV * W, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* kn = reinterpret_cast<const T*>(a.k);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* krow = kn + row * a.kv_stride;
    const char* ahead = row_ahead(a, kn, j, j1);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      const T* kr = krow + kh * a.kv_head_stride;
      prefetch_head<T>(a, ahead, kh, hd * static_cast<int64_t>(sizeof(T)));
      vf kv[NV];
      LOCR_UNROLL for (int v = 0; v < NV; ++v) kv[v] = vload_kv(kr + v * W);
      const float f = key_factor<T>(a, row, kh);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const float* qh = qi + h * hd;
        vf acc0 = vmul(vload(qh), kv[0]);
        vf acc1 = vmul(vload(qh + W), kv[1]);
        LOCR_UNROLL for (int v = 2; v < NV; v += 2) {
          acc0 = vfma(vload(qh + v * W), kv[v], acc0);
          acc1 = vfma(vload(qh + (v + 1) * W), kv[v + 1], acc1);
        }
        s[h * jn + (j - j0)] = vhsum(vadd(acc0, acc1)) * f;
      }
    }
  }
}

template <class T, int NV>
void narrow_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = NV * W, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* vn = reinterpret_cast<const T*>(a.v);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* vrow = vn + row * a.kv_stride;
    const char* ahead = row_ahead(a, vn, j, j1);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      const T* vr = vrow + kh * a.kv_head_stride;
      prefetch_head<T>(a, ahead, kh, hd * static_cast<int64_t>(sizeof(T)));
      vf vv[NV];
      LOCR_UNROLL for (int v = 0; v < NV; ++v) vv[v] = vload_kv(vr + v * W);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const vf p = vset1(value_factor<T>(a, row, kh, s[h * jn + (j - j0)]));
        float* oh = o + h * hd;
        LOCR_UNROLL for (int v = 0; v < NV; ++v) vstore(oh + v * W, vfma(p, vv[v], vload(oh + v * W)));
      }
    }
  }
}

// The same two passes one kv head at a time, for GQA groups of G query heads small enough that
// the group's queries (scores) or outputs (values) stay in registers over the keys instead of
// being loaded (and stored) once per key. Keys go in blocks of kHeldKeys whose pool rows are
// looked up once. Each score and output element is computed exactly as above, in the same order.
constexpr int64_t kHeldAhead = 16, kHeldKeys = 128;
// The group's G x NV vectors and a key's NV fit in AVX-512's 32 registers; AVX2 (16) would spill.
constexpr bool kHeldInRegisters = W == 16;

// Pool rows of keys [jb, min(j1, jb + n_max)); returns how many.
inline int64_t held_rows(const AttnArgs& a, int64_t jb, int64_t j1, int64_t n_max, int64_t* rows) {
  const int64_t n = min64(j1 - jb, n_max);
  for (int64_t t = 0; t < n; ++t) rows[t] = kv_row(a, jb + t);
  return n;
}

template <class T, int NV>
inline void prefetch_held(const T* p) {
  LOCR_UNROLL for (int l = 0; l < NV * W * static_cast<int>(sizeof(T)); l += 64)
    __builtin_prefetch(reinterpret_cast<const char*>(p) + l, 0, 3);
}

template <class T, int NV, int G>
void held_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = NV * W, jn = j1 - j0;
  const auto* kn = reinterpret_cast<const T*>(a.k);
  int64_t rows[kHeldKeys + kHeldAhead];
  for (int64_t jb = j0; jb < j1; jb += kHeldKeys) {
    const int64_t nr = held_rows(a, jb, j1, kHeldKeys + kHeldAhead, rows), nb = min64(kHeldKeys, j1 - jb);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      vf q[G][NV];
      LOCR_UNROLL for (int g = 0; g < G; ++g)
        LOCR_UNROLL for (int v = 0; v < NV; ++v) q[g][v] = vload(qi + (kh * G + g) * hd + v * W);
      const T* base = kn + kh * a.kv_head_stride;
      for (int64_t t = 0; t < nb; ++t) {
        if (t + kHeldAhead < nr) prefetch_held<T, NV>(base + rows[t + kHeldAhead] * a.kv_stride);
        const T* kr = base + rows[t] * a.kv_stride;
        vf kv[NV];
        LOCR_UNROLL for (int v = 0; v < NV; ++v) kv[v] = vload_kv(kr + v * W);
        const float f = key_factor<T>(a, rows[t], kh);
        LOCR_UNROLL for (int g = 0; g < G; ++g) {
          vf acc0 = vmul(q[g][0], kv[0]);
          vf acc1 = vmul(q[g][1], kv[1]);
          LOCR_UNROLL for (int v = 2; v < NV; v += 2) {
            acc0 = vfma(q[g][v], kv[v], acc0);
            acc1 = vfma(q[g][v + 1], kv[v + 1], acc1);
          }
          s[(kh * G + g) * jn + (jb + t - j0)] = vhsum(vadd(acc0, acc1)) * f;
        }
      }
    }
  }
}

template <class T, int NV, int G>
void held_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = NV * W, jn = j1 - j0;
  const auto* vn = reinterpret_cast<const T*>(a.v);
  int64_t rows[kHeldKeys + kHeldAhead];
  for (int64_t jb = j0; jb < j1; jb += kHeldKeys) {
    const int64_t nr = held_rows(a, jb, j1, kHeldKeys + kHeldAhead, rows), nb = min64(kHeldKeys, j1 - jb);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      vf acc[G][NV];
      LOCR_UNROLL for (int g = 0; g < G; ++g)
        LOCR_UNROLL for (int v = 0; v < NV; ++v) acc[g][v] = vload(o + (kh * G + g) * hd + v * W);
      const T* base = vn + kh * a.kv_head_stride;
      for (int64_t t = 0; t < nb; ++t) {
        if (t + kHeldAhead < nr) prefetch_held<T, NV>(base + rows[t + kHeldAhead] * a.kv_stride);
        const T* vr = base + rows[t] * a.kv_stride;
        vf vv[NV];
        LOCR_UNROLL for (int v = 0; v < NV; ++v) vv[v] = vload_kv(vr + v * W);
        LOCR_UNROLL for (int g = 0; g < G; ++g) {
          const vf p = vset1(value_factor<T>(a, rows[t], kh, s[(kh * G + g) * jn + (jb + t - j0)]));
          LOCR_UNROLL for (int v = 0; v < NV; ++v) acc[g][v] = vfma(p, vv[v], acc[g][v]);
        }
      }
      LOCR_UNROLL for (int g = 0; g < G; ++g)
        LOCR_UNROLL for (int v = 0; v < NV; ++v) vstore(o + (kh * G + g) * hd + v * W, acc[g][v]);
    }
  }
}

// The split paths: the held paths for head dims of more vectors than AVX2's 16 registers hold
// (128 or 256 dims). Keys go in blocks of kSplitKeys and each block one kv head at a time.
// Scores: each key head is widened once for its whole GQA group, two vectors at a time, against
// the group's queries read from L1; the two accumulators of each query head take the even and the
// odd vectors, as in held_scores. Values: the group's outputs stay in registers kSplitCV<G> vectors of columns at a
// time over the block's keys (a pass per 64 or 32 bytes of a BF16 value row), loaded and stored
// once per block instead of once per key. The same products in the same order as above.
// Memory: while a block is worked on, the next block's rows (every kv head: whole pool rows, in
// address order) are prefetched into L2 at an even rate; the chunk's first block is fetched
// before its work starts. Reading a block kv head by kv head straight from DRAM (256 of every
// 2,048 bytes at a time) ran at well under the streaming rate on a Zen 3.
constexpr int64_t kSplitKeys = 16;
// Output vectors per pass: G x CV accumulators, CV values and a probability fit 16 registers.
template <int G>
constexpr int kSplitCV = G >= 4 ? 2 : 4;

// Prefetches the lines of rows rows[0 .. n) (each the kv heads' bytes of a pool row) into L2, a
// few at a time, in address order within each row.
struct RowPrefetch {
  const char* x;
  const int64_t* rows;
  int64_t n, row_stride, lines, r = 0, l = 0;
  template <class T>
  RowPrefetch(const AttnArgs& a, const T* base, const int64_t* rows_, int64_t n_)
      : x(reinterpret_cast<const char*>(base)), rows(rows_), n(n_),
        row_stride(a.kv_stride * static_cast<int64_t>(sizeof(T))),
        lines((((a.n_kv_heads - 1) * a.kv_head_stride + a.head_dim) * static_cast<int64_t>(sizeof(T)) + 63) / 64) {}
  int64_t total() const { return n * lines; }
  void run(int64_t k) {
    for (; k > 0 && r < n; --k) {
      __builtin_prefetch(x + rows[r] * row_stride + l * 64, 0, 2);
      if (++l == lines) l = 0, ++r;
    }
  }
};

template <class T, int NV, int G>
void split_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  static_assert(NV % 2 == 0, "split_scores takes the vectors in pairs");
  const int64_t hd = NV * W, jn = j1 - j0;
  const auto* kn = reinterpret_cast<const T*>(a.k);
  int64_t rows[2 * kSplitKeys];
  for (int64_t jb = j0; jb < j1; jb += kSplitKeys) {
    // This block's pool rows and the next one's.
    const int64_t nr = held_rows(a, jb, j1, 2 * kSplitKeys, rows), nb = min64(kSplitKeys, j1 - jb);
    if (jb == j0) RowPrefetch(a, kn, rows, nb).run(INT64_MAX);
    RowPrefetch next(a, kn, rows + nb, nr - nb);
    const int64_t per = (next.total() + a.n_kv_heads * nb - 1) / (a.n_kv_heads * nb);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      const float* q = qi + kh * G * hd;
      const T* base = kn + kh * a.kv_head_stride;
      for (int64_t t = 0; t < nb; ++t) {
        next.run(per);
        const T* kr = base + rows[t] * a.kv_stride;
        vf acc[G][2];
        {
          const vf k0 = vload_kv(kr), k1 = vload_kv(kr + W);
          LOCR_UNROLL for (int g = 0; g < G; ++g) {
            acc[g][0] = vmul(vload(q + g * hd), k0);
            acc[g][1] = vmul(vload(q + g * hd + W), k1);
          }
        }
        LOCR_UNROLL for (int v = 2; v < NV; v += 2) {
          const vf k0 = vload_kv(kr + v * W), k1 = vload_kv(kr + (v + 1) * W);
          LOCR_UNROLL for (int g = 0; g < G; ++g) {
            acc[g][0] = vfma(vload(q + g * hd + v * W), k0, acc[g][0]);
            acc[g][1] = vfma(vload(q + g * hd + (v + 1) * W), k1, acc[g][1]);
          }
        }
        const float f = key_factor<T>(a, rows[t], kh);
        LOCR_UNROLL for (int g = 0; g < G; ++g)
          s[(kh * G + g) * jn + (jb + t - j0)] = vhsum(vadd(acc[g][0], acc[g][1])) * f;
      }
    }
  }
}

template <class T, int NV, int G>
void split_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  constexpr int CV = kSplitCV<G>;
  static_assert(NV % CV == 0, "split_values takes the columns CV vectors at a time");
  const int64_t hd = NV * W, jn = j1 - j0;
  const auto* vn = reinterpret_cast<const T*>(a.v);
  int64_t rows[2 * kSplitKeys];
  for (int64_t jb = j0; jb < j1; jb += kSplitKeys) {
    // This block's pool rows and the next one's.
    const int64_t nr = held_rows(a, jb, j1, 2 * kSplitKeys, rows), nb = min64(kSplitKeys, j1 - jb);
    if (jb == j0) RowPrefetch(a, vn, rows, nb).run(INT64_MAX);
    RowPrefetch next(a, vn, rows + nb, nr - nb);
    const int64_t steps = a.n_kv_heads * (NV / CV) * nb, per = (next.total() + steps - 1) / steps;
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      const T* base = vn + kh * a.kv_head_stride;
      const float* sk = s + kh * G * jn + (jb - j0);
      for (int c0 = 0; c0 < NV; c0 += CV) {
        vf acc[G][CV];
        LOCR_UNROLL for (int g = 0; g < G; ++g)
          LOCR_UNROLL for (int v = 0; v < CV; ++v) acc[g][v] = vload(o + (kh * G + g) * hd + (c0 + v) * W);
        for (int64_t t = 0; t < nb; ++t) {
          next.run(per);
          const T* vr = base + rows[t] * a.kv_stride + c0 * W;
          vf vv[CV];
          LOCR_UNROLL for (int v = 0; v < CV; ++v) vv[v] = vload_kv(vr + v * W);
          LOCR_UNROLL for (int g = 0; g < G; ++g) {
            const vf p = vset1(value_factor<T>(a, rows[t], kh, sk[g * jn + t]));
            LOCR_UNROLL for (int v = 0; v < CV; ++v) acc[g][v] = vfma(p, vv[v], acc[g][v]);
          }
        }
        LOCR_UNROLL for (int g = 0; g < G; ++g)
          LOCR_UNROLL for (int v = 0; v < CV; ++v) vstore(o + (kh * G + g) * hd + (c0 + v) * W, acc[g][v]);
      }
    }
  }
}

// The split paths for GQA groups of 1, 2 or 4 (LightOnOCR-2: 2 at 128 dims; LightOnOCR-3: 4 at
// 256); false for other groups.
template <class T, int NV>
bool split_scores_for(int64_t group, const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  if (group == 1) return split_scores<T, NV, 1>(a, qi, j0, j1, s), true;
  if (group == 2) return split_scores<T, NV, 2>(a, qi, j0, j1, s), true;
  if (group == 4) return split_scores<T, NV, 4>(a, qi, j0, j1, s), true;
  return false;
}
template <class T, int NV>
bool split_values_for(int64_t group, const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  if (group == 1) return split_values<T, NV, 1>(a, j0, j1, s, o), true;
  if (group == 2) return split_values<T, NV, 2>(a, j0, j1, s, o), true;
  if (group == 4) return split_values<T, NV, 4>(a, j0, j1, s, o), true;
  return false;
}

// FP8 keys/values of other head dims (up to kFp8WidenMax): each key (value) head is widened once
// into an f32 buffer on the stack and used by every query head of its GQA group, so the
// conversion is paid once per kv head, not once per query head.
constexpr int64_t kFp8WidenMax = 512;

inline void widen_fp8(const uint8_t* x, float* y, int64_t hd) {
  int64_t d = 0;
  for (; d + W <= hd; d += W) vstore(y + d, vload_fp8_lo(x + d));
  if (d < hd) vstore_n(y + d, vload_fp8_lo_n(x + d, static_cast<int>(hd - d)), static_cast<int>(hd - d));
}

void fp8_scores_widened(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* k8 = reinterpret_cast<const uint8_t*>(a.k);
  alignas(64) float kb[kFp8WidenMax];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const char* ahead = row_ahead(a, k8, j, j1);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      prefetch_head<uint8_t>(a, ahead, kh, hd);
      widen_fp8(k8 + row * a.kv_stride + kh * a.kv_head_stride, kb, hd);
      const float f = key_factor<uint8_t>(a, row, kh);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        s[h * jn + (j - j0)] = dot_hd(qi + h * hd, static_cast<const float*>(kb), hd) * f;
      }
    }
  }
}

void fp8_values_widened(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* v8 = reinterpret_cast<const uint8_t*>(a.v);
  alignas(64) float vb[kFp8WidenMax];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const char* ahead = row_ahead(a, v8, j, j1);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      prefetch_head<uint8_t>(a, ahead, kh, hd);
      widen_fp8(v8 + row * a.kv_stride + kh * a.kv_head_stride, vb, hd);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const vf p = vset1(value_factor<uint8_t>(a, row, kh, s[h * jn + (j - j0)]));
        float* oh = o + h * hd;
        int64_t d = 0;
        for (; d + W <= hd; d += W) vstore(oh + d, vfma(p, vload(vb + d), vload(oh + d)));
        if (d < hd) {
          const int n = static_cast<int>(hd - d);
          vstore_n(oh + d, vfma(p, vload_n(vb + d, n), vload_n(oh + d, n)), n);
        }
      }
    }
  }
}

// Scores (values) of keys [j0, j1) for one element type: the register paths for head_dim of 4 or
// 8 vectors (64 / 128 with AVX-512, 32 / 64 with AVX2) of a BF16 or FP8 cache, on AVX2 the split
// paths for 16 or 32 vectors (128 / 256), FP8 of other head dims widened once per kv head, else
// the generic loops.
template <class T>
void kv_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t nv = a.head_dim % W == 0 ? a.head_dim / W : 0;
  if constexpr (!std::is_same_v<T, float>) {
    const int64_t group = a.n_heads / a.n_kv_heads;
    if (kHeldInRegisters && nv == 8 && group == 2) return held_scores<T, 8, 2>(a, qi, j0, j1, s);
    if (kHeldInRegisters && nv == 8 && group == 1) return held_scores<T, 8, 1>(a, qi, j0, j1, s);
    if (!kHeldInRegisters && nv == 16 && split_scores_for<T, 16>(group, a, qi, j0, j1, s)) return;
    if (!kHeldInRegisters && nv == 32 && split_scores_for<T, 32>(group, a, qi, j0, j1, s)) return;
    if (nv == 8) return narrow_scores<T, 8>(a, qi, j0, j1, s);
    if (nv == 4) return narrow_scores<T, 4>(a, qi, j0, j1, s);
  }
  if constexpr (std::is_same_v<T, uint8_t>)
    if (a.head_dim <= kFp8WidenMax) return fp8_scores_widened(a, qi, j0, j1, s);
  chunk_scores<T>(a, qi, j0, j1, s);
}
template <class T>
void kv_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t nv = a.head_dim % W == 0 ? a.head_dim / W : 0;
  if constexpr (!std::is_same_v<T, float>) {
    const int64_t group = a.n_heads / a.n_kv_heads;
    if (kHeldInRegisters && nv == 8 && group == 2) return held_values<T, 8, 2>(a, j0, j1, s, o);
    if (kHeldInRegisters && nv == 8 && group == 1) return held_values<T, 8, 1>(a, j0, j1, s, o);
    if (!kHeldInRegisters && nv == 16 && split_values_for<T, 16>(group, a, j0, j1, s, o)) return;
    if (!kHeldInRegisters && nv == 32 && split_values_for<T, 32>(group, a, j0, j1, s, o)) return;
    if (nv == 8) return narrow_values<T, 8>(a, j0, j1, s, o);
    if (nv == 4) return narrow_values<T, 4>(a, j0, j1, s, o);
  }
  if constexpr (std::is_same_v<T, uint8_t>)
    if (a.head_dim <= kFp8WidenMax) return fp8_values_widened(a, j0, j1, s, o);
  chunk_values<T>(a, j0, j1, s, o);
}

// Few queries (decode), flash-decoding style: one query row i against keys [j0, j1) for every
// head at once, so each K and V row (all kv heads, contiguous) is streamed from memory exactly
// once. Writes per-head partial results: o [n_heads][head_dim] (unnormalised), ml [n_heads][2]
// (max score, sum of exp). Scratch: n_heads * (j1 - j0) floats. f32 arithmetic in every mode (K/V
// widened from BF16 or FP8 when the cache is): this path is bound by reading K and V, not by arithmetic.
void k_attn_chunk(const AttnArgs& a, int64_t i, int64_t j0, int64_t j1, float* o, float* ml, float* s) {
  const int64_t hd = a.head_dim, nh = a.n_heads;
  const int64_t n_vis = a.causal ? min64(a.n_kv, a.q_offset + i + 1) : a.n_kv;
  j1 = min64(j1, n_vis);
  const int64_t jn = j1 - j0;
  for (int64_t e = 0; e < nh * hd; ++e) o[e] = 0.0f;
  if (jn <= 0) {
    for (int64_t h = 0; h < nh; ++h) {
      ml[2 * h] = -INFINITY;
      ml[2 * h + 1] = 0.0f;
    }
    return;
  }
  const float* qi = a.q + i * a.q_stride;
  if (a.kv_fp8) kv_scores<uint8_t>(a, qi, j0, j1, s);
  else if (a.kv_bf16) kv_scores<uint16_t>(a, qi, j0, j1, s);
  else kv_scores<float>(a, qi, j0, j1, s);
  for (int64_t h = 0; h < nh; ++h) {
    float* sh = s + h * jn;
    float mx = -INFINITY;
    for (int64_t j = 0; j < jn; ++j) mx = sh[j] > mx ? sh[j] : mx;
    const vf mv = vset1(mx);
    vf sum = vzero();
    int64_t j = 0;
    for (; j + W <= jn; j += W) {
      const vf p = vexp(vsub(vload(sh + j), mv));
      vstore(sh + j, p);
      sum = vadd(sum, p);
    }
    if (j < jn) {
      const int n = static_cast<int>(jn - j);
      const vf p = vexp(vsub(vload_n(sh + j, n), mv));
      vstore_n(sh + j, p, n);
      sum = vadd(sum, vblend(vlt(viota(), vset1(static_cast<float>(n))), vzero(), p));
    }
    ml[2 * h] = mx;
    ml[2 * h + 1] = vhsum(sum);
  }
  if (a.kv_fp8) kv_values<uint8_t>(a, j0, j1, s, o);
  else if (a.kv_bf16) kv_values<uint16_t>(a, j0, j1, s, o);
  else kv_values<float>(a, j0, j1, s, o);
}

// Merges the chunk partials of query row i: out_h = sum_c e^(m_c - M) o_c / sum_c e^(m_c - M) l_c.
void k_attn_combine(const AttnArgs& a, int64_t i, int64_t n_chunks, const float* part_o, const float* part_ml) {
  const int64_t hd = a.head_dim, nh = a.n_heads;
  for (int64_t h = 0; h < nh; ++h) {
    float mx = -INFINITY;
    for (int64_t c = 0; c < n_chunks; ++c) mx = part_ml[(c * nh + h) * 2] > mx ? part_ml[(c * nh + h) * 2] : mx;
    float* out = a.out + i * a.out_stride + h * hd;
    for (int64_t d = 0; d < hd; ++d) out[d] = 0.0f;
    if (mx == -INFINITY) continue;
    float l = 0.0f;
    for (int64_t c = 0; c < n_chunks; ++c) {
      const float mc = part_ml[(c * nh + h) * 2];
      if (mc == -INFINITY) continue;
      const float wgt = std::exp(mc - mx);
      l += wgt * part_ml[(c * nh + h) * 2 + 1];
      const vf wv = vset1(wgt);
      const float* oc = part_o + (c * nh + h) * hd;
      int64_t d = 0;
      for (; d + W <= hd; d += W) vstore(out + d, vfma(wv, vload(oc + d), vload(out + d)));
      if (d < hd) {
        const int n = static_cast<int>(hd - d);
        vstore_n(out + d, vfma(wv, vload_n(oc + d, n), vload_n(out + d, n)), n);
      }
    }
    const vf inv = vset1(1.0f / l);
    int64_t d = 0;
    for (; d + W <= hd; d += W) vstore(out + d, vmul(vload(out + d), inv));
    if (d < hd) vstore_n(out + d, vmul(vload_n(out + d, static_cast<int>(hd - d)), inv), static_cast<int>(hd - d));
  }
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
