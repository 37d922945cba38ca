// CpuOps: the Ops implementation of the fast CPU backends. Compiled with baseline flags: it picks
// a KernelTable once, packs weights, splits work over the global ThreadPool and hands tiles to
// the per-ISA leaf kernels. It does no arithmetic of its own beyond packing.
//
// GEMM blocking (y[M,N] = x[M,K] W[N,K]^T): W is packed once (prepare) into panels of nr output
// columns, K-major (or bf16 pairs for vdpbf16ps). Activations are packed per block of mc rows x kc
// columns into mr-row tiles that stay in L2 while every panel of W streams past them; each
// microkernel call keeps an mr x nr tile of y in registers. Small M (decode) packs x once and
// splits the panels across threads, so every weight byte is read exactly once per call.
#include "kernels/cpu/cpu_ops.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_driver.h"
#include "kernels/cpu/greedy_screen.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/packed_weight.h"
#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_matmul.h"

namespace locr::kernels {

using cpu::BFormat;
using cpu::KernelTable;
using cpu::PackedDeleter;
using cpu::PackedWeight;
using cpu::ceil_div;
using cpu::kPackedMagic;
using cpu::pack_rows;
using cpu::pack_weight;
using cpu::panels_hold_rows_exactly;
using cpu::unpack_row;
using cpu::scratch_slot;

namespace {

bool attention_dot_allowed();  // LOCR_CPU_ATTN_DOT=0: no attention tiles on vdpbf16ps
bool attention_f16_allowed();  // LOCR_CPU_ATTN_F16=0: no attention tiles on fp16 products
bool greedy_screen_allowed();  // LOCR_GREEDY_SCREEN=0: matmul_argmax reads the whole head

class CpuOps final : public Ops {
 public:
  CpuOps(CpuPrecision precision, CpuIsa isa, const KernelTable* t) : precision_(precision), isa_(isa), t_(t) {
    name_ = std::string(precision == CpuPrecision::kF32 ? "cpu-f32" : "cpu-bf16") + "/" + t->isa;
  }

  const char* name() const override { return name_.c_str(); }

  BFormat format_for(DType dtype) const {
    if (precision_ == CpuPrecision::kBF16) return t_->bf16_dot ? BFormat::kPairsBf16 : BFormat::kKMajorBf16;
    return dtype == DType::kBF16 ? BFormat::kKMajorBf16 : BFormat::kKMajorF32;
  }

  const PackedWeight* own_packed(const Matrix& w) const {
    if (!w.packed || std::get_deleter<PackedDeleter>(w.packed) == nullptr) return nullptr;
    const auto* pw = static_cast<const PackedWeight*>(w.packed.get());
    if (pw->magic != kPackedMagic || pw->fmt != format_for(w.dtype) || pw->nr != t_->nr || pw->n != w.rows ||
        pw->k != w.cols)
      return nullptr;
    return pw;
  }

  void prepare(Matrix& w) override {
    if (is_quantized_weight(w.dtype)) return prepare_quantized_weight(w);  // quant_matmul.h
    if (own_packed(w) != nullptr) return;
    w.packed = pack_weight(w, format_for(w.dtype), t_->nr);
  }

  // Float parts of one dtype and width are packed as one weight (one GEMM reads the input once);
  // quantized parts are prepared (repacked) one by one, each multiplied into its columns.
  void prepare_stack(StackedMatrix& w) override {
    bool fuse = w.parts.size() > 1;
    for (const Matrix& p : w.parts)
      fuse = fuse && p.data != nullptr && p.dtype == w.parts.front().dtype && p.cols == w.parts.front().cols &&
             (p.dtype == DType::kF32 || p.dtype == DType::kBF16 || p.dtype == DType::kF16);
    if (!fuse) {
      Ops::prepare_stack(w);
      return;
    }
    std::vector<const Matrix*> parts;
    for (const Matrix& p : w.parts) parts.push_back(&p);
    w.fused = Matrix();
    w.fused.dtype = w.parts.front().dtype;
    w.fused.rows = w.rows();
    w.fused.cols = w.cols();
    w.fused.packed = pack_rows(parts, format_for(w.fused.dtype), t_->nr);  // no unpacked copy: data stays null
  }

  size_t argmax_extra_bytes(const Matrix& w) const override {
    const PackedWeight* pw = own_packed(w);
    return pw != nullptr && pw->screen ? pw->screen->bytes() : 0;
  }

  // The greedy head's 8-bit screen (greedy_screen.h), from the rows as the packed GEMM multiplies
  // them (rounded to bf16 where its panels are bf16). Needs the packed weight and the rows.
  void prepare_argmax(Matrix& w) override {
    auto* pw = const_cast<PackedWeight*>(own_packed(w));
    if (pw == nullptr || w.data == nullptr || pw->screen || !greedy_screen_allowed()) return;
    const bool to_bf16 = pw->fmt != BFormat::kKMajorF32 && w.dtype != DType::kBF16;
    const size_t row_bytes = dtype_size(w.dtype) * static_cast<size_t>(w.cols);
    pw->screen = cpu::build_greedy_screen(w.rows, w.cols, [&](int64_t r, float* out) {
      convert_to_f32(w.dtype, static_cast<const char*>(w.data) + static_cast<size_t>(r) * row_bytes, out, w.cols);
      if (to_bf16)
        for (int64_t c = 0; c < w.cols; ++c) out[c] = bf16_to_f32(f32_to_bf16(out[c]));
    });
  }

 private:
  void run_matmul(const View& xv, const Matrix& w, const View& yv) override {
    const int64_t M = xv.rows;
    if (is_quantized_weight(w.dtype)) {
      // The quantized GEMMs take contiguous rows: strided views go through scratch copies.
      const float* x = xv.f32();
      if (!xv.contiguous()) {
        float* c = static_cast<float*>(scratch_slot(1).get(static_cast<size_t>(xv.numel()) * 4));
        for (int64_t r = 0; r < M; ++r) std::memcpy(c + r * xv.cols, xv.f32() + r * xv.stride, xv.cols * 4);
        x = c;
      }
      float* y = yv.contiguous() ? yv.f32() : static_cast<float*>(scratch_slot(2).get(static_cast<size_t>(yv.numel()) * 4));
      quantized_matmul(isa_, w, x, M, y);
      if (!yv.contiguous())
        for (int64_t r = 0; r < M; ++r) std::memcpy(yv.f32() + r * yv.stride, y + r * yv.cols, yv.cols * 4);
      return;
    }
    std::shared_ptr<void> temp;
    const PackedWeight* pw = own_packed(w);
    if (pw == nullptr) {
      // Correct but slow (a full copy per call): weights should be prepare()d once at load.
      static std::atomic<bool> warned{false};
      if (w.rows * w.cols >= (1 << 20) && !warned.exchange(true))
        LOCR_DEBUG(name_, ": matmul on an unprepared ", w.rows, "x", w.cols, " weight packs it on every call");
      temp = pack_weight(w, format_for(w.dtype), t_->nr);
      pw = static_cast<const PackedWeight*>(temp.get());
    }
    gemm(xv.f32(), xv.stride, M, *pw, yv.f32(), yv.stride);
  }

  // Greedy tokens: the screen's candidates (greedy_screen.h), then the exact values of their
  // panel groups from the same GEMM calls matmul makes (gemm's `only_groups`), so the argmax is
  // matmul's bit for bit. Without a screen, or when the candidates are many, the full product.
  void run_matmul_argmax(const View& xv, const Matrix& w, int32_t* out) override {
    const int64_t M = xv.rows, N = w.rows, K = w.cols;
    const PackedWeight* pw = own_packed(w);
    const cpu::GreedyScreen* sc = pw != nullptr ? pw->screen.get() : nullptr;
    if (sc == nullptr || M > t_->mr * 8) return argmax_of_matmul(xv, w, out);
    const int64_t nb = K / cpu::kScreenBlock, ld = sc->groups * cpu::kScreenRows;
    auto* h = static_cast<float*>(scratch_slot(3).get(static_cast<size_t>(M * (K + nb + 2 * ld)) * 4));
    float* l1 = h + M * K;
    float* sv = l1 + M * nb;
    float* ev = sv + M * ld;
    const bool round_bf16 = precision_ == CpuPrecision::kBF16;  // as pack_a_f32 / pack_a_pairs round x
    if (!cpu::screen_inputs(xv.f32(), xv.stride, M, K, round_bf16, h, l1)) return argmax_of_matmul(xv, w, out);
    const cpu::ScreenArgs a{sc->q, sc->dc, K, h, l1, M, sv, ev, ld};
    ThreadPool::global().parallel_for(sc->groups, 16, [&](int64_t g0, int64_t g1, int) { t_->screen_rows(a, g0, g1); });
    // Candidate rows per activation row, and the GEMM's panel groups (kFewGroup panels) holding them.
    std::vector<std::vector<int64_t>> cand(static_cast<size_t>(M));
    std::vector<int64_t> groups;
    const int64_t group_rows = kFewGroup * pw->nr;
    for (int64_t m = 0; m < M; ++m) {
      if (!cpu::screen_candidates(sv + m * ld, ev + m * ld, N, &cand[m])) return argmax_of_matmul(xv, w, out);
      for (int64_t r : cand[m]) groups.push_back(r / group_rows);
    }
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    if (static_cast<int64_t>(groups.size()) * 4 > ceil_div(pw->panels, kFewGroup))
      return argmax_of_matmul(xv, w, out);  // a flat row of scores: reading it all is cheaper
    auto* y = static_cast<float*>(scratch_slot(4).get(static_cast<size_t>(M * N) * 4));
    gemm(xv.f32(), xv.stride, M, *pw, y, N, &groups);
    for (int64_t m = 0; m < M; ++m) {
      int64_t best = cand[m].front();
      for (int64_t r : cand[m])
        if (y[m * N + r] > y[m * N + best]) best = r;  // increasing r: the first maximum wins
      out[m] = static_cast<int32_t>(best);
    }
  }

  // Panels per task of the few-row path (independent FMA chains side by side in the microkernel).
  static constexpr int64_t kFewGroup = 4;

  // y = x · Wᵀ. only_groups (few rows only): just the columns of these groups of kFewGroup panels,
  // each computed by the call that computes it in a full product.
  void gemm(const float* x, int64_t ldx, int64_t M, const PackedWeight& pw, float* y, int64_t ldy,
            const std::vector<int64_t>* only_groups = nullptr) {
    const KernelTable& t = *t_;
    const int64_t N = pw.n, K = pw.k, KP = pw.k_pad, nr = pw.nr, mr = t.mr;
    const bool pairs = pw.fmt == BFormat::kPairsBf16;
    const bool round_a = precision_ == CpuPrecision::kBF16 && !pairs;  // emulated bf16 inputs
    const size_t belem = pw.fmt == BFormat::kKMajorF32 ? 4 : 2;
    // K block: f32 A tiles (14 x 512 x 4 = 28 KB) and a widened B slice (128 KB) live in L1/L2;
    // measured flat between 256 and 1024 on the development machine.
    const int64_t kc_max = pairs ? 2048 : 512;  // even
    const int64_t k_span = pairs ? KP : K;       // pairs consume the zero pad column
    const int64_t n_kb = ceil_div(k_span, kc_max);
    auto kc_of = [&](int64_t kb) { return std::min(kc_max, k_span - kb * kc_max); };
    // A tile of kc columns: kc * mr f32, or kc/2 * mr u32 pairs; 4 bytes per element either way.
    auto tile_elems = [&](int64_t kc) { return pairs ? kc / 2 * mr : kc * mr; };
    auto pack = [&](const float* xs, int64_t rows, int64_t k0, int64_t kc, void* dst) {
      if (pairs) {
        t.pack_a_pairs(xs, ldx, rows, k0, kc, K, static_cast<uint32_t*>(dst));
      } else {
        t.pack_a_f32(xs, ldx, rows, k0, kc, K, static_cast<float*>(dst), round_a);
      }
    };
    auto b_at = [&](int64_t p, int64_t k0) {
      return static_cast<const char*>(pw.data) + static_cast<size_t>(p * KP * nr + k0 * nr) * belem;
    };
    ThreadPool& pool = ThreadPool::global();

    if (M <= mr * 8) {
      // Few rows (decode, small chunks): pack x once; threads split the weight panels.
      const int64_t tiles = ceil_div(M, mr);
      std::vector<int64_t> kb_off(n_kb + 1, 0);
      for (int64_t kb = 0; kb < n_kb; ++kb) kb_off[kb + 1] = kb_off[kb] + tiles * tile_elems(kc_of(kb));
      auto* a = static_cast<uint32_t*>(scratch_slot(0).get(static_cast<size_t>(kb_off[n_kb]) * 4));
      for (int64_t kb = 0; kb < n_kb; ++kb) pack(x, M, kb * kc_max, kc_of(kb), a + kb_off[kb]);
      // Groups of kFewGroup panels per call give the microkernel independent FMA chains side by side.
      const int64_t groups = only_groups ? static_cast<int64_t>(only_groups->size()) : ceil_div(pw.panels, kFewGroup);
      pool.parallel_for(groups, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t gi = b; gi < e; ++gi) {
          const int64_t g = only_groups ? (*only_groups)[gi] : gi;
          const int64_t p0 = g * kFewGroup;
          const int np = static_cast<int>(std::min<int64_t>(kFewGroup, pw.panels - p0));
          const int n_last = static_cast<int>(std::min<int64_t>(nr, N - (p0 + np - 1) * nr));
          for (int64_t kb = 0; kb < n_kb; ++kb) {
            const int64_t kc = kc_of(kb);
            for (int64_t ti = 0; ti < tiles; ++ti) {
              const int m = static_cast<int>(std::min<int64_t>(mr, M - ti * mr));
              t.gemm_panels(pw.fmt, kc, a + kb_off[kb] + ti * tile_elems(kc), b_at(p0, kb * kc_max), KP * nr, np,
                            y + ti * mr * ldy + p0 * nr, ldy, m, n_last, kb > 0);
            }
          }
        }
      });
      return;
    }

    // Many rows: tasks are (group of row tiles) x (range of panels). A task runs its rows in blocks
    // of at most block_tiles tiles and packs each block's A.
    // bf16 K-major panels are widened to f32 once per (panel, K block) into an L2-resident slice
    // that all row tiles of the block reuse, so the microkernel runs at the pure-FMA rate.
    const bool widen = pw.fmt == BFormat::kKMajorBf16;
    // Rows per block: each block streams the whole weight again (from L3 or DRAM once it outgrows
    // L2) and, when widening, converts it again. Widened blocks are 3x taller (144 rows on AVX2:
    // A 288 KB at kc 512, inside a 512 KB L2), which took a 4096 x 1024 weight over 8,580 rows
    // from 82 to 93-99 GFLOP/s on one Zen 4 core (docs/benchmarks.md); the f32 and bf16-pair
    // panels measured no gain from it.
    const int64_t block_tiles = widen ? 24 : 8;
    const int64_t threads = pool.size(), tiles = ceil_div(M, mr);
    // Row groups of equal tile counts (within one), up to 4 per thread: parallel_for hands out
    // chunks of one task when there are at most 4 per thread, so every thread gets the same number
    // of rows. Blocks of mc rows handed out in chunks left a thread a block or a chunk behind: 2,159
    // prefill rows made 20 blocks in 7 chunks, one thread running 4 of them (docs/benchmarks.md).
    // No split changes a result: each element sums its K blocks in order.
    const int64_t groups = threads * std::clamp<int64_t>(tiles / (threads * block_tiles), 1, 4);
    const int64_t nsplit = std::clamp<int64_t>(ceil_div(4 * threads, groups), 1, pw.panels);
    const int64_t per_split = ceil_div(pw.panels, nsplit);
    const int64_t max_block = std::min(block_tiles, ceil_div(tiles, groups)) * mr;  // rows
    const size_t a_bytes = static_cast<size_t>(max_block / mr * tile_elems(kc_max)) * 4;
    // Panels per group: a row tile runs against `pg` consecutive K-major panels before the next
    // tile, so its A (14 x 512 f32 = 28 KB) stays in L1 while the f32 panel slices (64 KB each on
    // AVX-512, widened or not) stream from L2, where the group (256 KB) waits for the next tile.
    // One panel at a time streamed both from L2 on every tile: +5-10% on one Xeon core
    // (docs/benchmarks.md). AVX2's slice (32 KB) fits L1 beside its 12 KB tile: measured neutral
    // there, so it keeps one panel; the vdpbf16ps pair panels were tuned on Zen and keep theirs.
    const int64_t pg = pairs || nr < 32 ? 1 : 4;
    const size_t w_bytes = widen ? static_cast<size_t>(pg * kc_max * nr) * 4 : 0;
    const size_t per_thread = (a_bytes + w_bytes + 63) / 64 * 64;
    char* abuf = static_cast<char*>(scratch_slot(0).get(per_thread * threads));
    pool.parallel_for(groups * nsplit, 1, [&](int64_t b, int64_t e, int thread) {
      auto* a = reinterpret_cast<uint32_t*>(abuf + per_thread * thread);
      auto* wide = reinterpret_cast<float*>(abuf + per_thread * thread + a_bytes);
      for (int64_t task = b; task < e; ++task) {
        const int64_t g = task / nsplit, ns = task % nsplit;
        const int64_t t0 = g * tiles / groups, t1 = (g + 1) * tiles / groups;
        const int64_t p0 = ns * per_split, p1 = std::min(pw.panels, p0 + per_split);
        // Blocks of the group: as many as block_tiles needs, their tiles spread evenly.
        const int64_t n_blocks = ceil_div(t1 - t0, block_tiles);
        for (int64_t blk = 0; blk < n_blocks; ++blk) {
          const int64_t m0 = (t0 + blk * (t1 - t0) / n_blocks) * mr;
          const int64_t rows = std::min(M, (t0 + (blk + 1) * (t1 - t0) / n_blocks) * mr) - m0;
          const int64_t btiles = ceil_div(rows, mr);
          for (int64_t kb = 0; kb < n_kb; ++kb) {
            const int64_t kc = kc_of(kb), te = tile_elems(kc);
            pack(x + m0 * ldx, rows, kb * kc_max, kc, a);
            for (int64_t q0 = p0; q0 < p1; q0 += pg) {
              const int np = static_cast<int>(std::min<int64_t>(pg, p1 - q0));
              const int n_last = static_cast<int>(std::min<int64_t>(nr, N - (q0 + np - 1) * nr));
              const void* bp = b_at(q0, kb * kc_max);
              int64_t b_stride = KP * nr;
              BFormat fmt = pw.fmt;
              if (widen && btiles > 1) {
                for (int i = 0; i < np; ++i)
                  t.bf16_to_f32(reinterpret_cast<const uint16_t*>(b_at(q0 + i, kb * kc_max)), wide + i * kc * nr,
                                kc * nr);
                bp = wide;
                b_stride = kc * nr;
                fmt = BFormat::kKMajorF32;
              }
              for (int64_t ti = 0; ti < btiles; ++ti) {
                const int m = static_cast<int>(std::min<int64_t>(mr, rows - ti * mr));
                t.gemm_panels(fmt, kc, a + ti * te, bp, b_stride, np, y + (m0 + ti * mr) * ldy + q0 * nr, ldy, m,
                              n_last, kb > 0);
              }
            }
          }
        }
      }
    });
  }

  void run_rms_norm(const View& x, const Matrix& w, float eps, const View& y) override {
    const int64_t dim = w.rows * w.cols, groups = x.cols / dim;
    const float* wf = weight_f32(w, 2);
    // Rows of groups: a contiguous pair of views is one run of rows * groups groups.
    if (x.contiguous() && y.contiguous()) {
      const int64_t n = x.rows * groups;
      ThreadPool::global().parallel_for(n, std::max<int64_t>(1, 8192 / std::max<int64_t>(dim, 1)),
                                        [&](int64_t b, int64_t e, int) {
                                          t_->rms_norm_rows(x.f32() + b * dim, wf, eps, e - b, dim, y.f32() + b * dim);
                                        });
      return;
    }
    ThreadPool::global().parallel_for(x.rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(x.cols, 1)),
                                      [&](int64_t b, int64_t e, int) {
                                        for (int64_t r = b; r < e; ++r)
                                          t_->rms_norm_rows(x.f32() + r * x.stride, wf, eps, groups, dim,
                                                            y.f32() + r * y.stride);
                                      });
  }

  void run_rope(const View& x, const View& cos, const View& sin) override {
    const int64_t half = cos.cols, head_dim = 2 * half, n_heads = x.cols / head_dim;
    ThreadPool::global().parallel_for(x.rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(x.cols, 1)),
                                      [&](int64_t b, int64_t e, int) {
                                        t_->rope_rows(x.f32() + b * x.stride, e - b, n_heads, head_dim, x.stride,
                                                      cos.f32() + b * half, sin.f32() + b * half);
                                      });
  }

  void run_silu_mul(const View& gate, const View& up, const View& out) override {
    if (gate.contiguous() && up.contiguous() && out.contiguous()) {
      ThreadPool::global().parallel_for(gate.numel(), kElemGrain, [&](int64_t b, int64_t e, int) {
        t_->silu_mul(gate.f32() + b, up.f32() + b, out.f32() + b, e - b);
      });
      return;
    }
    ThreadPool::global().parallel_for(gate.rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(gate.cols, 1)),
                                      [&](int64_t b, int64_t e, int) {
                                        for (int64_t r = b; r < e; ++r)
                                          t_->silu_mul(gate.f32() + r * gate.stride, up.f32() + r * up.stride,
                                                       out.f32() + r * out.stride, gate.cols);
                                      });
  }

  void run_gelu(const View& x) override {
    ThreadPool::global().parallel_for(x.numel(), kElemGrain,
                                      [&](int64_t b, int64_t e, int) { t_->gelu(x.f32() + b, e - b); });
  }

  void run_add(const View& y, const View& x) override {
    ThreadPool::global().parallel_for(y.numel(), kElemGrain,
                                      [&](int64_t b, int64_t e, int) { t_->add(y.f32() + b, x.f32() + b, e - b); });
  }

  // ---- Qwen3.5 family ----
  void run_layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y) override {
    const float* wf = weight_f32(w, 1);
    const float* bf = weight_f32(b, 2);
    ThreadPool::global().parallel_for(x.rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(x.cols, 1)),
                                      [&](int64_t r0, int64_t r1, int) {
                                        t_->layer_norm_rows(x.f32() + r0 * x.stride, x.stride, wf, bf, eps, r1 - r0,
                                                            x.cols, y.f32() + r0 * y.stride, y.stride);
                                      });
  }

  void run_add_bias(const View& y, const Matrix& b) override {
    const float* bf = weight_f32(b, 2);
    ThreadPool::global().parallel_for(y.rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(y.cols, 1)),
                                      [&](int64_t r0, int64_t r1, int) {
                                        for (int64_t r = r0; r < r1; ++r) t_->add(y.f32() + r * y.stride, bf, y.cols);
                                      });
  }

  void run_gelu_tanh(const View& x) override {
    ThreadPool::global().parallel_for(x.numel(), kElemGrain,
                                      [&](int64_t b, int64_t e, int) { t_->gelu_tanh(x.f32() + b, e - b); });
  }

  void run_sigmoid_mul(const View& gate, const View& x, const View& out) override {
    if (gate.contiguous() && x.contiguous() && out.contiguous()) {
      ThreadPool::global().parallel_for(gate.numel(), kElemGrain, [&](int64_t b, int64_t e, int) {
        t_->sigmoid_mul(gate.f32() + b, x.f32() + b, out.f32() + b, e - b);
      });
      return;
    }
    ThreadPool::global().parallel_for(gate.rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(gate.cols, 1)),
                                      [&](int64_t b, int64_t e, int) {
                                        for (int64_t r = b; r < e; ++r)
                                          t_->sigmoid_mul(gate.f32() + r * gate.stride, x.f32() + r * x.stride,
                                                          out.f32() + r * out.stride, gate.cols);
                                      });
  }

  // Fresh slots zeroed, then tasks of (sequence, block of rows) that only read the states, then each
  // sequence's last K-1 inputs moved into its slot: rows are independent, so the split changes no bit.
  void run_conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b,
                       const View& out) override {
    const int64_t C = w.rows, K = w.cols, S = K - 1;
    const float* wt = conv_weight_kc(w);  // [K][C]
    auto slot = [&](int64_t i) { return state.f32() + b.host_slots[i] * state.stride; };
    const int64_t rows_per_task = std::max<int64_t>(1, 65536 / C);
    struct Task {
      int64_t seq, t0, t1;
    };
    std::vector<Task> tasks;
    for (int64_t i = 0; i < b.n_seqs; ++i) {
      const int64_t n = b.host_cu_q[i + 1] - b.host_cu_q[i];
      if (n > 0 && b.host_fresh[i]) std::memset(slot(i), 0, sizeof(float) * S * C);
      for (int64_t t0 = 0; t0 < n; t0 += rows_per_task) tasks.push_back({i, t0, std::min(n, t0 + rows_per_task)});
    }
    ThreadPool& pool = ThreadPool::global();
    // A decode step's few rows run on the calling thread: microseconds of work.
    const int64_t n_tasks = static_cast<int64_t>(tasks.size());
    const int64_t grain = x.rows * C * K < (1 << 17) ? n_tasks : 1;
    pool.parallel_for(n_tasks, grain, [&](int64_t a, int64_t e, int) {
      for (int64_t ti = a; ti < e; ++ti) {
        const Task& t = tasks[ti];
        const int64_t r0 = b.host_cu_q[t.seq];
        t_->conv1d_silu_rows(x.f32() + r0 * x.stride, x.stride, wt, C, K, slot(t.seq), t.t0, t.t1,
                             out.f32() + r0 * out.stride, out.stride);
      }
    });
    // The window's last K-1 rows: state row u <- window row n + u (a later state row, or a row of x),
    // ascending so that no state row is overwritten before it is read.
    for (int64_t i = 0; i < b.n_seqs; ++i) {
      const int64_t r0 = b.host_cu_q[i], n = b.host_cu_q[i + 1] - r0;
      if (n <= 0) continue;
      float* st = slot(i);
      for (int64_t u = 0; u < S; ++u) {
        const float* src = n + u < S ? st + (n + u) * C : x.f32() + (r0 + n + u - S) * x.stride;
        std::memcpy(st + u * C, src, sizeof(float) * C);
      }
    }
  }

  // Per-row scalars first (gates, q/k norms), then tasks of (sequence, value head, columns of the
  // state): columns are independent, so neither the thread count nor the split changes a bit.
  void run_gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                           const Matrix& a_log, const Matrix& dt_bias, const View& state, const StateBatch& b,
                           const DeltaNetParams& p, const View& out) override {
    cpu::GdnArgs g{};
    g.q = q.f32();
    g.k = k.f32();
    g.v = v.f32();
    g.a = a.f32();
    g.b = beta_in.f32();
    g.out = out.f32();
    g.q_stride = q.stride;
    g.k_stride = k.stride;
    g.v_stride = v.stride;
    g.a_stride = a.stride;
    g.b_stride = beta_in.stride;
    g.out_stride = out.stride;
    g.n_k_heads = p.n_k_heads;
    g.n_v_heads = p.n_v_heads;
    g.tiled = p.tiled;
    g.k_dim = p.k_dim;
    g.v_dim = p.v_dim;
    g.l2_eps = p.l2_eps;
    const int64_t nv = p.n_v_heads;
    auto* params = static_cast<float*>(scratch_slot(2).get(static_cast<size_t>(2 * nv) * 4));
    for (int64_t h = 0; h < nv; ++h) {
      params[h] = a_log.at(h / a_log.cols, h % a_log.cols);
      params[nv + h] = dt_bias.at(h / dt_bias.cols, h % dt_bias.cols);
    }
    g.a_log = params;
    g.dt_bias = params + nv;
    g.scal_stride = 2 * nv + 3 * p.n_k_heads;
    g.scal = static_cast<float*>(scratch_slot(1).get(static_cast<size_t>(q.rows * g.scal_stride) * 4));
    ThreadPool& pool = ThreadPool::global();
    pool.parallel_for(q.rows, std::max<int64_t>(1, 256 / std::max<int64_t>(g.scal_stride, 1)),
                      [&](int64_t r0, int64_t r1, int) { t_->gdn_prep(g, r0, r1); });
    std::vector<int64_t> seqs;
    for (int64_t i = 0; i < b.n_seqs; ++i)
      if (b.host_cu_q[i + 1] > b.host_cu_q[i]) seqs.push_back(i);
    const int64_t chunks = ceil_div(p.v_dim, t_->gdn_cols), per_seq = nv * chunks;
    const int64_t head_floats = p.k_dim * p.v_dim;
    const size_t work_bytes = static_cast<size_t>(p.k_dim * t_->gdn_cols) * 4;
    pool.parallel_for(static_cast<int64_t>(seqs.size()) * per_seq, 1, [&](int64_t t0, int64_t t1, int) {
      // Scratch of the thread running the task (slot 0: the calling thread's slots 1 and 2 hold the
      // per-row scalars and the parameters).
      float* work = b.max_q > 1 ? static_cast<float*>(scratch_slot(0).get(work_bytes)) : nullptr;
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t i = seqs[task / per_seq], h = task % per_seq / chunks, j0 = task % chunks * t_->gdn_cols;
        const int64_t r0 = b.host_cu_q[i], n = b.host_cu_q[i + 1] - r0;
        float* s = state.f32() + b.host_slots[i] * state.stride + h * head_floats;
        t_->gdn_chunk(g, r0, n, s, b.host_fresh[i] != 0, h, j0, work);
      }
    });
  }

 public:
  DType kv_dtype() const override { return precision_ == CpuPrecision::kBF16 ? DType::kBF16 : DType::kF32; }


 private:
  void run_attention(const View& q, const View& k, const View& v, const View& out,
                     const AttentionParams& p) override {
    // cpu-bf16 where vdpbf16ps beats FMA: the tiles (the vision encoders', the decoder's prompt
    // rows) on bf16 pairs. LOCR_CPU_ATTN_DOT=0 keeps the f32 tiles (for comparisons).
    const bool dot_tile = precision_ == CpuPrecision::kBF16 && t_->attn_tile_bf16 != nullptr && attention_dot_allowed();
    // cpu-bf16 on an AVX512-FP16 CPU: the bidirectional tiles (the vision encoders) on fp16
    // products at twice the f32 rate, before either of the others. LOCR_CPU_ATTN_F16=0 keeps those.
    const bool f16_tile = precision_ == CpuPrecision::kBF16 && t_->attn_tile_f16 != nullptr && attention_f16_allowed();
    cpu::attention(*t_, dot_tile, f16_tile, q.f32(), k.data, v.data, out.f32(), p);
  }

  // A BF16 cache's rows converted by the vector kernel over the pool (a prompt writes megabytes per
  // layer; the host default is a scalar loop). F32 and FP8 caches take the default.
  void run_kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv) override {
    const int32_t* sl = slots.as<const int32_t>();
    if (kv.dtype != DType::kBF16) return kv_store_host(k.f32(), k.stride, v.f32(), v.stride, sl, k.rows, kv);
    const int64_t n = k.rows, width = kv.width();
    for (int64_t r = 0; r < n; ++r)
      LOCR_CHECK(sl[r] >= 0 && sl[r] < kv.rows, "KV slot ", sl[r], " outside the pool of ", kv.rows, " rows");
    auto* kd = static_cast<uint16_t*>(kv.k);
    auto* vd = static_cast<uint16_t*>(kv.v);
    const float *kf = k.f32(), *vf = v.f32();
    ThreadPool::global().parallel_for(n, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(width, 1)),
                                      [&](int64_t b, int64_t e, int) {
                                        for (int64_t r = b; r < e; ++r) {
                                          t_->f32_to_bf16_round(kf + r * k.stride, kd + sl[r] * width, width);
                                          t_->f32_to_bf16_round(vf + r * v.stride, vd + sl[r] * width, width);
                                        }
                                      });
  }

  void run_embed(const Matrix& table, const View& idv, const View& outv) override {
    const int32_t* ids = idv.as<const int32_t>();
    const int64_t n = idv.numel(), dim = table.cols, ld = outv.stride;
    float* out = outv.f32();
    for (int64_t i = 0; i < n; ++i)
      LOCR_CHECK(ids[i] >= 0 && ids[i] < table.rows, "token id ", ids[i], " outside the embedding table");
    // A table this backend has packed (a tied head's copy, shared by the model at load) is read
    // from its panels where they hold it exactly: the checkpoint's pages of it went back to the
    // kernel, and gathering from them would fault rows in from disk, a second copy over time.
    const PackedWeight* pw = own_packed(table);
    if (pw != nullptr && !panels_hold_rows_exactly(*pw, table.dtype)) pw = nullptr;
    ThreadPool::global().parallel_for(n, std::max<int64_t>(1, 16384 / std::max<int64_t>(dim, 1)),
                                      [&](int64_t b, int64_t e, int) {
                                        for (int64_t i = b; i < e; ++i) {
                                          if (pw != nullptr) {
                                            unpack_row(*pw, ids[i], out + i * ld);
                                          } else {
                                            convert_row(table, ids[i], out + i * ld);
                                          }
                                        }
                                      });
  }

 private:
  static constexpr int64_t kElemGrain = 16384;

  void convert_row(const Matrix& m, int64_t r, float* out) const {
    const int64_t n = m.cols;
    switch (m.dtype) {
      case DType::kF32:
        std::memcpy(out, static_cast<const float*>(m.data) + r * n, n * sizeof(float));
        break;
      case DType::kBF16:
        t_->bf16_to_f32(static_cast<const uint16_t*>(m.data) + r * n, out, n);
        break;
      case DType::kF16:
        t_->f16_to_f32(static_cast<const uint16_t*>(m.data) + r * n, out, n);
        break;
      case DType::kQ8_0: {
        const auto* block = static_cast<const uint8_t*>(m.data) + r * dtype_row_bytes(m.dtype, n);
        for (int64_t b = 0; b < n / 32; ++b, block += 34) {
          uint16_t h;
          std::memcpy(&h, block, 2);
          const float d = f16_to_f32(h);
          for (int j = 0; j < 32; ++j) out[b * 32 + j] = d * static_cast<float>(static_cast<int8_t>(block[2 + j]));
        }
        break;
      }
      case DType::kQ4_K: {  // Matrix::at's values (io::dequantize_row's), a super-block at a time
        const auto* block = static_cast<const uint8_t*>(m.data) + r * dtype_row_bytes(m.dtype, n);
        for (int64_t b = 0; b < n / 256; ++b, block += 144)
          for (int e = 0; e < 256; ++e) out[b * 256 + e] = cpu::q4_k_value(block, e);
        break;
      }
      case DType::kQ6_K: {  // Matrix::at's values (io::dequantize_row's), a super-block at a time
        const auto* block = static_cast<const uint8_t*>(m.data) + r * dtype_row_bytes(m.dtype, n);
        for (int64_t b = 0; b < n / 256; ++b, block += 210)
          for (int e = 0; e < 256; ++e) out[b * 256 + e] = cpu::q6_k_value(block, e);
        break;
      }
      default:
        LOCR_CHECK(false, "unsupported table dtype ", dtype_name(m.dtype));
    }
  }

  // The weight as f32 (itself if already f32), converted into per-thread scratch `slot`.
  const float* weight_f32(const Matrix& w, int slot) const {
    if (w.dtype == DType::kF32) return static_cast<const float*>(w.data);
    float* buf = static_cast<float*>(scratch_slot(slot).get(static_cast<size_t>(w.rows * w.cols) * 4));
    for (int64_t r = 0; r < w.rows; ++r) convert_row(w, r, buf + r * w.cols);
    return buf;
  }

  // conv1d_silu's kernel [C, K] as f32 [K][C] (a vector of channels per tap), made at a weight's
  // first use and kept while its storage lives: keyed by the weight's data and shape, the holder's
  // weak pointer telling a live weight from a freed one at the same address. Transposing it on
  // every call took ~75 us of each decode step's call. A weight without a holder (not a model's)
  // is transposed into scratch each time.
  const float* conv_weight_kc(const Matrix& w) {
    const int64_t C = w.rows, K = w.cols;
    auto transpose = [&](float* wt) {
      const float* wf = weight_f32(w, 2);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < K; ++j) wt[j * C + c] = wf[c * K + j];
    };
    if (!w.holder) {
      auto* wt = static_cast<float*>(scratch_slot(1).get(static_cast<size_t>(C * K) * 4));
      transpose(wt);
      return wt;
    }
    const ConvKey key{w.data, w.dtype, C, K};
    std::lock_guard<std::mutex> lock(conv_mu_);
    auto it = conv_weights_.find(key);
    if (it != conv_weights_.end() && !it->second.holder.expired()) return it->second.kc.data();
    for (auto e = conv_weights_.begin(); e != conv_weights_.end();)  // weights freed since
      e = e->second.holder.expired() ? conv_weights_.erase(e) : std::next(e);
    ConvCopy& copy = conv_weights_[key];
    copy.holder = w.holder;
    copy.kc.resize(static_cast<size_t>(C * K));
    transpose(copy.kc.data());
    return copy.kc.data();
  }
  struct ConvKey {
    const void* data;
    DType dtype;
    int64_t rows, cols;
    bool operator<(const ConvKey& o) const {
      return std::tie(data, dtype, rows, cols) < std::tie(o.data, o.dtype, o.rows, o.cols);
    }
  };
  struct ConvCopy {
    std::weak_ptr<void> holder;
    std::vector<float> kc;
  };
  std::mutex conv_mu_;
  std::map<ConvKey, ConvCopy> conv_weights_;

  CpuPrecision precision_;
  CpuIsa isa_;
  const KernelTable* t_;
  std::string name_;
};

// For "cpu-bf16" on an AVX512_BF16 machine: use vdpbf16ps only where it beats 512-bit FMA on
// bf16-rounded inputs (same products, exact in f32; only the summation order differs).
// LOCR_CPU_BF16_DOT=0/1 overrides the one-time measurement.
bool attention_dot_allowed() {
  static const bool on = [] {
    const char* env = std::getenv("LOCR_CPU_ATTN_DOT");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

bool attention_f16_allowed() {
  static const bool on = [] {
    const char* env = std::getenv("LOCR_CPU_ATTN_F16");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

bool greedy_screen_allowed() {
  static const bool on = [] {
    const char* env = std::getenv("LOCR_GREEDY_SCREEN");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

bool prefer_bf16_dot() {
  static const bool prefer = [] {
    if (const char* env = std::getenv("LOCR_CPU_BF16_DOT")) return std::string(env) != "0";
    const KernelTable* t = cpu::kernel_table_avx512_bf16();
    return t->dot_vs_fma_speed() > 1.1;
  }();
  return prefer;
}


}  // namespace

std::unique_ptr<Ops> make_cpu_ops(CpuPrecision precision, CpuIsa isa) {
  // An explicit ISA is honoured as given (tests, benchmarks); kAuto picks the fastest path.
  if (isa == CpuIsa::kAuto) {
    isa = cpu_best_isa();
    // f32 never uses the bf16 dot-product kernels; the AVX-512 VNNI table is the same code without
    // them (and with the same quantized kernels).
    if (isa == CpuIsa::kAvx512Bf16 && (precision == CpuPrecision::kF32 || !prefer_bf16_dot()))
      isa = CpuIsa::kAvx512Vnni;
  }
  return std::make_unique<CpuOps>(precision, isa, cpu_kernel_table(isa));
}

}  // namespace locr::kernels
