// The attention tile on AVX512-FP16 (Intel Sapphire Rapids and later): QK^T and PV as fp16
// products summed in fp16 over one head (QK^T, at most 128 terms) or one block of 64 keys (PV),
// then widened to f32, where everything else stays: the softmax (max, exp2, the running sum from
// the unrounded P), the rescale and the sum over key blocks. One vfmadd231ph is 32 products where
// a 512-bit FMA is 16 at the same rate, so the products run at twice the f32 tile's rate.
// Layout: S [64 keys][64 queries] as the f32 tile's; P [64 keys][64 queries] fp16; the output
// transposed, OT [head_dim][64 queries], so that both products broadcast a K or V element (packed
// twice per 32-bit word: a load-port broadcast) against a vector of 32 queries.
//
// Ranges: the caller (cpu_attention.cc) scales the query, the keys and the values by powers of two
// so that no fp16 sum can overflow: |q|, |k| <= 2^4 (|q.k| <= 128 * 2^8 = 2^15), |v| <= 2^5 and P
// times 2^4 <= 2^4 (64 keys: <= 2^15); the powers of two come back out exactly when the sums are
// widened. The roundings against the f32 tile: q, k, v and P to fp16 (2^-11 relative, finer than the
// bf16 dot tile's 2^-8) and each fp16 partial sum (2^-11 of the running sum). docs/numerics.md,
// "Attention", has the error budget against the bf16 attention bound.
//
// Compiled with -mavx512fp16 (kernels/CMakeLists.txt); nothing here runs unless add_attention_f16
// found the extension.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wunused-function"  // the shared headers' other kernels, unused here
#define LOCR_CPU_NS avx512fp16
#define LOCR_CPU_MR 14
#define LOCR_CPU_JR 6
#define LOCR_CPU_ATTN_QV 4
#define LOCR_CPU_PV_IR 6
#define LOCR_CPU_PV_ND 4
#include <cpuid.h>

#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/kernels_attention.h"  // block_max, block_prob, load_q_transposed, store_tile_output_t

namespace locr::kernels::cpu::avx512fp16 {
namespace {

static_assert(kBQ == 64, "the fp16 tile's query rows are the f32 tile's: 4 f32 vectors, 2 fp16 vectors");
constexpr int kBKVh = 64;  // keys per block: PV sums at most 64 fp16 products per output
constexpr int kJRh = 8;    // keys per QK^T microkernel: 8 keys x 2 vectors of 32 queries
constexpr int kDRh = 8;    // head dims per PV microkernel, x 2 vectors of 32 queries (hd a multiple of 32)
constexpr float kPScale = 16.0f;  // P times 2^4 in fp16: probabilities down to 2^-18 stay normal

inline __m512h as_ph(__m512i v) { return _mm512_castsi512_ph(v); }
inline __m512i as_si(__m512h v) { return _mm512_castph_si512(v); }
// fp16 lanes [0, 16) and [16, 32) of x widened to f32 (exact).
inline vf lo_f32(__m512h x) { return _mm512_cvtph_ps(_mm512_castsi512_si256(as_si(x))); }
inline vf hi_f32(__m512h x) { return _mm512_cvtph_ps(_mm512_extracti64x4_epi64(as_si(x), 1)); }
// x rounded to fp16 (RNE), 16 values.
inline __m256i to_f16(vf x) { return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// x rounded to fp16, each value in both halves of its 32-bit lane.
inline __m512i dup_f16(vf x) {
  const __m512i h = _mm512_cvtepu16_epi32(to_f16(x));
  return _mm512_or_si512(h, _mm512_slli_epi32(h, 16));
}
// All 32 fp16 lanes equal to the value stored twice in *p (one broadcast load, no shuffle: a 16-bit
// broadcast would take the shuffle port, which is one of the two FMA ports).
inline __m512h bcast_dup(const uint32_t* p) { return as_ph(_mm512_set1_epi32(static_cast<int>(*p))); }

void k_attn_pack_f16(const float* k, const float* v, int64_t stride, int64_t hd, int64_t j0, int64_t j1,
                     float k_scale, float v_scale, uint32_t* kd, uint32_t* vd) {
  const vf ks = vset1(k_scale), vs = vset1(v_scale);
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t d = 0; d < hd; d += W) {
      _mm512_storeu_si512(kd + j * hd + d, dup_f16(vmul(vload(k + j * stride + d), ks)));
      _mm512_storeu_si512(vd + j * hd + d, dup_f16(vmul(vload(v + j * stride + d), vs)));
    }
}

// S rows [0, JR) (keys kd, hd apart) for the tile's 64 queries: qt [hd][64] fp16, one fp16 sum
// over the head per score, widened and times su.
template <int JR>
inline void qk_rows_h(const uint32_t* kd, int64_t hd, const uint16_t* qt, vf su, float* s) {
  __m512h acc[JR][2];
  LOCR_UNROLL for (int r = 0; r < JR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ph();
  for (int64_t d = 0; d < hd; ++d) {
    const __m512h q0 = as_ph(_mm512_loadu_si512(qt + d * kBQ)), q1 = as_ph(_mm512_loadu_si512(qt + d * kBQ + 32));
    LOCR_UNROLL for (int r = 0; r < JR; ++r) {
      const __m512h kb = bcast_dup(kd + r * hd + d);
      acc[r][0] = _mm512_fmadd_ph(kb, q0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ph(kb, q1, acc[r][1]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < 2; ++v) {
    vstore(s + r * kBQ + v * 32, vmul(lo_f32(acc[r][v]), su));
    vstore(s + r * kBQ + v * 32 + W, vmul(hi_f32(acc[r][v]), su));
  }
}

template <int JR = kJRh>
inline void qk_dispatch_h(int jr, const uint32_t* kd, int64_t hd, const uint16_t* qt, vf su, float* s) {
  if constexpr (JR >= 1) {
    if (jr == JR) return qk_rows_h<JR>(kd, hd, qt, su, s);
    qk_dispatch_h<JR - 1>(jr, kd, hd, qt, su, s);
  }
}

// softmax_block (kernels_attention.h) with the probabilities written as fp16 (times kPScale) to
// P [jn][64]: the same statistics, summed in the same order.
inline void softmax_f16(const float* s, int64_t jn, vf (&m)[kAttnQV], vf (&l)[kAttnQV], float* alpha_out,
                        uint16_t* pb) {
  BlockMax bm[kAttnQV];
  block_max<kAttnQV>(s, jn, kBQ, m, bm);
  const vf ps = vset1(kPScale);
  vf sum[kAttnQV];
  LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) sum[v] = vzero();
  for (int64_t j = 0; j < jn; ++j)
    LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) {
      const vf p = block_prob<false>(vload(s + j * kBQ + v * W), bm[v].ms);
      sum[v] = vadd(sum[v], p);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb + j * kBQ + v * W), to_f16(vmul(p, ps)));
    }
  LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) {
    l[v] = vfma(l[v], bm[v].alpha, sum[v]);
    m[v] = bm[v].mx;
    vstore(alpha_out + v * W, bm[v].alpha);
  }
}

// O transposed, rows [d0, d0 + DR) of OT [hd][64]: OT * alpha (per query; none for the first block)
// + vu * the fp16 sum over the block's jn keys of V[j][d] (vd: each value twice per word, rows hd
// apart) times P[j] (the 64 queries).
template <int DR>
inline void pv_rows_h(int64_t jn, const uint32_t* vd, int64_t hd, const uint16_t* pb, const float* alpha, vf vu,
                      float* ot, int64_t d0) {
  __m512h acc[DR][2];
  LOCR_UNROLL for (int r = 0; r < DR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ph();
  for (int64_t j = 0; j < jn; ++j) {
    const __m512h p0 = as_ph(_mm512_loadu_si512(pb + j * kBQ)), p1 = as_ph(_mm512_loadu_si512(pb + j * kBQ + 32));
    LOCR_UNROLL for (int r = 0; r < DR; ++r) {
      const __m512h vb = bcast_dup(vd + j * hd + d0 + r);
      acc[r][0] = _mm512_fmadd_ph(vb, p0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ph(vb, p1, acc[r][1]);
    }
  }
  vf al[kAttnQV];
  if (alpha) LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) al[v] = vload(alpha + v * W);
  LOCR_UNROLL for (int r = 0; r < DR; ++r) LOCR_UNROLL for (int c = 0; c < 2; ++c) {
    float* op = ot + (d0 + r) * kBQ + c * 32;
    vf lo = vmul(lo_f32(acc[r][c]), vu), hi = vmul(hi_f32(acc[r][c]), vu);
    if (alpha) {
      lo = vfma(vload(op), al[2 * c], lo);
      hi = vfma(vload(op + W), al[2 * c + 1], hi);
    }
    vstore(op, lo);
    vstore(op + W, hi);
  }
}

void k_attn_tile_f16(const AttnArgs& a, int64_t h, int64_t q0, float* scratch) {
  const int64_t hd = a.head_dim, group = a.n_heads / a.n_kv_heads, kh = h / group;
  const int nq = static_cast<int>(min64(kBQ, a.n_q - q0));
  float* qt32 = scratch;                                   // [hd][64] f32
  float* s = qt32 + hd * kBQ;                              // [64][64] f32
  auto* qt = reinterpret_cast<uint16_t*>(s + kBKVh * kBQ);  // [hd][64] fp16 (attn_tile_scratch's S space)
  auto* pb = reinterpret_cast<uint16_t*>(s + 128 * kBQ);   // [64][64] fp16
  float* ot = s + 128 * kBQ + kBKVh * kBQ;                 // [hd][64]: O transposed
  float* alpha = ot + hd * kBQ;                            // [64]
  float* lsum = alpha + kBQ;                               // [64]
  load_q_transposed(a.q + q0 * a.q_stride + h * hd, a.q_stride, nq, hd, a.f16_q_scale, qt32);
  for (int64_t e = 0; e < hd * kBQ; e += W)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qt + e), to_f16(vload(qt32 + e)));
  vf m[kAttnQV], l[kAttnQV];
  LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) {
    m[v] = vset1(-INFINITY);
    l[v] = vzero();
  }
  const vf su = vset1(a.f16_s_unscale), vu = vset1(a.f16_v_unscale / kPScale);
  const uint32_t* kdh = a.kh16 + kh * a.n_kv * hd;
  const uint32_t* vdh = a.vh16 + kh * a.n_kv * hd;
  for (int64_t j0 = 0; j0 < a.n_kv; j0 += kBKVh) {
    const int64_t jn = min64(kBKVh, a.n_kv - j0);
    for (int64_t jj = 0; jj < jn; jj += kJRh)
      qk_dispatch_h(static_cast<int>(min64(kJRh, jn - jj)), kdh + (j0 + jj) * hd, hd, qt, su, s + jj * kBQ);
    softmax_f16(s, jn, m, l, alpha, pb);
    const float* al = j0 > 0 ? alpha : nullptr;
    for (int64_t d0 = 0; d0 < hd; d0 += kDRh) pv_rows_h<kDRh>(jn, vdh + j0 * hd, hd, pb, al, vu, ot, d0);
  }
  store_tile_output_t(a, h, q0, nq, ot, l, lsum);
}

// max |x| over rows [r0, r1) (stride floats apart) of width floats, or NaN when one is not finite.
float k_absmax_rows(const float* x, int64_t stride, int64_t r0, int64_t r1, int64_t width) {
  vf m = vzero(), bad = vzero();
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * stride;
    int64_t c = 0;
    for (; c + W <= width; c += W) {
      const vf v = vload(row + c);
      m = vmax(m, vabs(v));
      bad = vfma(v, vzero(), bad);  // NaN from a NaN or an infinity
    }
    if (c < width) {
      const vf v = vload_n(row + c, static_cast<int>(width - c));
      m = vmax(m, vabs(v));
      bad = vfma(v, vzero(), bad);
    }
  }
  const float b = vhsum(bad);
  return b == 0.0f ? _mm512_reduce_max_ps(m) : NAN;
}

// AVX512-FP16: CPUID leaf 7, sub-leaf 0, EDX bit 23 (GCC 12's __builtin_cpu_supports has the name,
// clang 14's does not). The avx512 tables are only handed out where the OS saves ZMM state.
bool has_avx512_fp16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 23)) != 0;
}

}  // namespace
}  // namespace locr::kernels::cpu::avx512fp16

namespace locr::kernels::cpu {

void add_attention_f16(KernelTable& t) {
  if (!avx512fp16::has_avx512_fp16()) return;
  t.attn_tile_f16 = avx512fp16::k_attn_tile_f16;
  t.attn_pack_f16 = avx512fp16::k_attn_pack_f16;
  t.absmax_rows = avx512fp16::k_absmax_rows;
}

}  // namespace locr::kernels::cpu
