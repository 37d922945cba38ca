// The per-ISA kernel table: plain function pointers filled by kernels_{generic,avx2,avx512}.cc.
//
// The ISA translation units contain only leaf kernels that work on one tile, panel or row range;
// threading, blocking, packing of weights and scratch allocation live in cpu_ops.cc and
// cpu_attention.cc (baseline flags). Keeping std:: templates out of the ISA files means no AVX code
// can reach a baseline caller through the linker's choice of an inline function's copy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace locr::kernels::cpu {

// Layout of a packed weight (B) panel of `nr` output columns; element offset of (panel p, k0)
// is p * k_pad * nr + k0 * nr for every format (k_pad = K rounded up to even, k0 even).
enum class BFormat : uint8_t {
  kKMajorF32,   // [K][nr] f32
  kKMajorBf16,  // [K][nr] bf16, upconverted exactly in the microkernel
  kPairsBf16,   // [K/2][nr][2] bf16 pairs, consumed by vdpbf16ps
};

// Flattened AttentionParams plus pointers (a POD the ISA files can take by const reference).
struct AttnArgs {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  int64_t n_q, n_kv, n_heads, n_kv_heads, head_dim, q_stride, kv_stride, out_stride, q_offset;
  int64_t kv_head_stride;  // elements between kv heads in k / v (head_dim when interleaved in rows)
  float scale;
  bool causal;
  // Few-query path only: k and v point at BF16 elements (a BF16 KV cache), or at FP8 E4M3 ones
  // with k_scale / v_scale [pool row][n_kv_heads] (AttentionParams); strides in elements.
  bool kv_bf16;
  bool kv_fp8;
  const float* k_scale;
  const float* v_scale;
  // Few-query path only: paged KV (logical key row j lives at row
  // block_table[j / block_size] * block_size + j % block_size), or null for contiguous rows.
  const int32_t* block_table;
  int64_t block_size;
  // bf16 tiled path only (prepared by the caller): per kv head, K rows [n_kv_pad][hd_pad] bf16 and V
  // pairs [n_kv_pad / 2][hd_pad][2] bf16 where hd_pad = head_dim rounded up to 32 and n_kv_pad =
  // n_kv rounded up to 2; kv head kh's start n_kv_pad * hd_pad elements after kh - 1's (both).
  const uint16_t* kb;
  const uint16_t* vb;
  int64_t hd_pad, n_kv_pad;
  // fp16 tiled path only (attn_tile_f16, prepared by the caller): per kv head, K and V rows
  // [n_kv][head_dim] with each fp16 value twice in a 32-bit word (one broadcast load gives all 32
  // lanes); kv head kh's start n_kv * head_dim words after kh - 1's. The query
  // is multiplied by f16_q_scale (scale * log2 e times a power of two) before its fp16 rounding;
  // scores are the fp16 sums times f16_s_unscale, outputs the fp16 sums times f16_v_unscale.
  const uint32_t* kh16;
  const uint32_t* vh16;
  float f16_q_scale, f16_s_unscale, f16_v_unscale;
};

// One Gated DeltaNet call (Ops::gated_delta_net) flattened for the ISA files: the activations with
// their row strides, the shapes, the per-head parameters as f32, and per-row scalars that
// gdn_prep fills once per call for gdn_chunk: row r's scal_stride floats at scal + r * scal_stride
// hold, per value head h, (decay, beta) at [2h, 2h+1] (decay = exp(g)), then per key head kh at
// 2 n_v_heads + 3 kh: ik = rsqrt(|k|^2 + eps), iq = rsqrt(|q|^2 + eps) / sqrt(k_dim), kq = (ik k).(iq q).
struct GdnArgs {
  const float* q;
  const float* k;
  const float* v;
  const float* a;
  const float* b;
  float* out;
  int64_t q_stride, k_stride, v_stride, a_stride, b_stride, out_stride;
  int64_t n_k_heads, n_v_heads, k_dim, v_dim;
  bool tiled;  // DeltaNetParams::tiled: value head h reads key head h % n_k_heads, else h / (n_v / n_k)
  float l2_eps;
  const float* a_log;    // [n_v_heads]
  const float* dt_bias;  // [n_v_heads]
  float* scal;
  int64_t scal_stride;  // 2 * n_v_heads + 3 * n_k_heads
};

// The greedy head's 8-bit screen (greedy_screen.h): row groups of kScreenRows head rows, each
// [K][kScreenRows] int8 q, then per block of kScreenBlock k's the rows' scales d and error
// coefficients c as bf16 ([K / kScreenBlock][2][kScreenRows]). For activation rows m < M (h
// [M][K], l1 [M][K / kScreenBlock]): s[m * ld + r] = sum_b d_b,r * sum_{k in b} q_k,r * h_m,k and
// e[m * ld + r] = sum_b c_b,r * l1_m,b for the rows r of groups [g0, g1).
constexpr int kScreenRows = 16;
constexpr int kScreenBlock = 32;
struct ScreenArgs {
  const int8_t* q;
  const uint16_t* dc;
  int64_t k;  // a multiple of kScreenBlock
  const float* h;
  const float* l1;
  int64_t m;
  float* s;
  float* e;
  int64_t ld;
};

struct KernelTable {
  const char* isa;
  int w;        // floats per vector
  int mr, nr;   // GEMM microkernel tile
  int attn_bq;      // query rows per attention tile (attn_tile)
  int attn_bq_dot;  // query rows per attn_tile_bf16 tile (0 without one)
  bool bf16_dot;  // has vdpbf16ps kernels (pack_a_pairs, gemm_tile on kPairsBf16, attn_tile_bf16)

  // A (activation) panel packing for rows [0, m) and columns [k0, k0 + kc) of x (row stride ldx):
  // ceil(m / mr) tiles. f32 tiles are [kc][mr] (optionally each value rounded to bf16);
  // pair tiles are [kc_pad / 2][mr] u32 holding (bf16 x[k], bf16 x[k+1]).
  void (*pack_a_f32)(const float* x, int64_t ldx, int64_t m, int64_t k0, int64_t kc, int64_t k_total,
                     float* dst, bool round_bf16);
  void (*pack_a_pairs)(const float* x, int64_t ldx, int64_t m, int64_t k0, int64_t kc, int64_t k_total,
                       uint32_t* dst);
  // C[m, n] (+)= A tile · B panel over kc (m <= mr, n <= nr). `a` is one packed tile, `b` points at
  // the panel's k0 row. ldc: row stride of C.
  void (*gemm_tile)(BFormat fmt, int64_t kc, const void* a, const void* b, float* c, int64_t ldc, int m, int n,
                    bool accumulate);
  // The same over np consecutive panels (b_stride elements apart; C columns follow on), for the
  // few-row path; n_last: columns of the last panel. Every element of C is the same FMA chain over
  // k as gemm_tile computes for it, whatever m and np are (batch invariance).
  void (*gemm_panels)(BFormat fmt, int64_t kc, const void* a, const void* b, int64_t b_stride, int np, float* c,
                      int64_t ldc, int m, int n_last, bool accumulate);

  // Element-wise (ranges; the caller splits them across threads).
  void (*rms_norm_rows)(const float* x, const float* w, float eps, int64_t rows, int64_t dim, float* y);
  void (*rope_rows)(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
                    const float* sin);
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*gelu)(float* x, int64_t n);
  void (*add)(float* y, const float* x, int64_t n);
  void (*exp)(const float* x, float* y, int64_t n);  // exposed for tests
  void (*erf)(const float* x, float* y, int64_t n);  // exposed for tests
  void (*exp2_softmax)(const float* x, float* y, int64_t n);  // the attention softmax's 2^x, for tests
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*fp8_to_f32)(const uint8_t* x, float* y, int64_t n);  // FP8 E4M3 (core/fp8.h), unscaled
  void (*f32_to_bf16_round)(const float* x, uint16_t* y, int64_t n);

  // Qwen3.5 family (kernels_qwen35.h). LayerNorm of `rows` rows of dim (strided x and y; y may be x).
  void (*layer_norm_rows)(const float* x, int64_t x_stride, const float* w, const float* b, float eps, int64_t rows,
                          int64_t dim, float* y, int64_t y_stride);
  void (*gelu_tanh)(float* x, int64_t n);
  void (*sigmoid_mul)(const float* gate, const float* x, float* out, int64_t n);  // out may be x
  // Rows [t0, t1) of one sequence's causal conv1d + SiLU (x, out at its first row): wt is the weight
  // transposed to [K][C] f32, state its slot [K-1][C] (read only: the caller updates it after).
  void (*conv1d_silu_rows)(const float* x, int64_t x_stride, const float* wt, int64_t C, int64_t K,
                           const float* state, int64_t t0, int64_t t1, float* out, int64_t out_stride);
  // Gated DeltaNet: gdn_prep fills g.scal for rows [r0, r1); gdn_chunk runs value head h of one
  // sequence (rows [r0, r0 + n), its head's state [k_dim][v_dim] at s, zeroed first when fresh) over
  // state columns [j0, j0 + gdn_cols) clipped to v_dim, in `work` (k_dim * gdn_cols floats of the
  // calling thread, or null) when it has several rows. Columns are independent: any split of the
  // heads and columns over threads gives the same bits, and so does any split of the rows over calls.
  int gdn_cols;
  void (*gdn_prep)(const GdnArgs& g, int64_t r0, int64_t r1);
  void (*gdn_chunk)(const GdnArgs& g, int64_t r0, int64_t n, float* s, bool fresh, int64_t h, int64_t j0,
                    float* work);

  // Attention. Tiled: one query head h, query rows [q0, q0 + attn_bq) clipped to n_q.
  // Scratch: attn_tile_scratch(head_dim) floats.
  void (*attn_tile)(const AttnArgs& a, int64_t h, int64_t q0, float* scratch);
  // bf16-dot tables only: the tile on vdpbf16ps, over the packed a.kb / a.vb of attn_pack_bf16,
  // which packs rows [j0, j1) (j0 even) of one kv head: k and v at its row 0, rows `stride` floats
  // apart, n_kv valid (AttnArgs::kb / vb give the layout).
  void (*attn_tile_bf16)(const AttnArgs& a, int64_t h, int64_t q0, float* scratch);
  void (*attn_pack_bf16)(const float* k, const float* v, int64_t stride, int64_t head_dim, int64_t hd_pad, int64_t j0,
                         int64_t j1, int64_t n_kv, uint16_t* kb, uint16_t* vb);
  // AVX-512 tables on a CPU with AVX512-FP16 only (null elsewhere): the tile with its products and
  // short sums in fp16 (kernels_avx512_fp16.cc), bidirectional, head_dim a multiple of 32 up to 128,
  // over a.kh16 / a.vh16 of attn_pack_f16, which packs rows [j0, j1) of one kv head (k and v at its
  // row 0, rows `stride` floats apart) times k_scale and v_scale. Query rows per tile: attn_bq.
  void (*attn_tile_f16)(const AttnArgs& a, int64_t h, int64_t q0, float* scratch);
  void (*attn_pack_f16)(const float* k, const float* v, int64_t stride, int64_t head_dim, int64_t j0, int64_t j1,
                        float k_scale, float v_scale, uint32_t* kd, uint32_t* vd);
  // With attn_tile_f16: max |x| over rows [r0, r1) (stride floats apart) of width floats, NaN when
  // one of them is not finite (the driver's ranges for the fp16 tile's scales).
  float (*absmax_rows)(const float* x, int64_t stride, int64_t r0, int64_t r1, int64_t width);
  // Few-query path (decode): query row i against keys [j0, j1) for all heads; partial results
  // o [n_heads][head_dim], ml [n_heads][2]; scratch n_heads * (j1 - j0) floats. Then combine.
  void (*attn_chunk)(const AttnArgs& a, int64_t i, int64_t j0, int64_t j1, float* o, float* ml, float* scratch);
  void (*attn_combine)(const AttnArgs& a, int64_t i, int64_t n_chunks, const float* part_o, const float* part_ml);

  // The greedy head's screen over row groups [g0, g1) (ScreenArgs; kernels_screen.h).
  void (*screen_rows)(const ScreenArgs& a, int64_t g0, int64_t g1);

  // Q8_0 weights packed by pack_q8_0 (groups of 16 rows, q8_0_block.h) against activation rows
  // from quantize_act_q8_0 (n_blocks * 40 bytes each): c[i * ldc + r] = the canonical Q8_0 dot
  // product of weight row r (r < rows, the rows of `groups` groups from w) and activation row i
  // (i < m), n_blocks blocks each. Every path returns the same bits, whatever rows and m (batch
  // invariance).
  void (*gemm_q8_0)(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                    float* c, int64_t ldc);
  // Q4_K weights packed by pack_q4_k (groups of 16 rows, q4_k_block.h) against activation rows from
  // quantize_act_q8_K (n_blocks * 276 bytes each): c[i * ldc + r] = the canonical Q4_K dot product
  // of weight row r (r < rows, the rows of `groups` groups from w) and activation row i (i < m),
  // n_blocks super-blocks each. The same bits on every path, whatever rows and m.
  void (*gemm_q4_k)(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                    float* c, int64_t ldc);
  // Q6_K weights packed by pack_q6_k (groups of 16 rows, q6_k_block.h) against activation rows from
  // quantize_act_q6_k (n_blocks * 324 bytes each): the canonical Q6_K dot product, as gemm_q4_k.
  void (*gemm_q6_k)(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                    float* c, int64_t ldc);

  // bf16-dot tables only: register-only throughput of vdpbf16ps relative to 512-bit FMA, in
  // FLOP per FLOP (> 1: the dot product instruction is faster). Takes about a millisecond.
  double (*dot_vs_fma_speed)();
};

inline int64_t attn_tile_scratch(const KernelTable& t, int64_t head_dim) {
  const int64_t hp = (head_dim + 31) / 32 * 32;
  // QT (hp x bq) + S (bkv x bq) + O (bq x hp) + P pairs + row stats. The fp16 tile (64 keys per
  // block, head_dim <= 128) keeps its fp16 QT (hp x bq / 2) in the S space beyond 64 keys.
  const int64_t bq = t.attn_bq > t.attn_bq_dot ? t.attn_bq : t.attn_bq_dot;
  return hp * bq + 128 * bq + bq * hp + 64 * bq + 8 * bq + 64;
}

const KernelTable* kernel_table_generic();
const KernelTable* kernel_table_avx2();       // AVX2 + FMA + F16C
const KernelTable* kernel_table_avx2_vnni();  // avx2 with AVX-VNNI quantized kernels (vpdpbusd / vpdpwssd, 256-bit)
const KernelTable* kernel_table_avx512();     // AVX-512F/BW/VL/DQ (+F16C): f32 FMA kernels
const KernelTable* kernel_table_avx512_vnni();  // avx512 with AVX512_VNNI quantized kernels (512-bit)
const KernelTable* kernel_table_avx512_bf16();  // avx512-vnni plus AVX512_BF16 dot-product kernels
// Sets t's attn_tile_f16, attn_pack_f16 and absmax_rows where the CPU has AVX512-FP16
// (kernels_avx512_fp16.cc).
void add_attention_f16(KernelTable& t);

}  // namespace locr::kernels::cpu
