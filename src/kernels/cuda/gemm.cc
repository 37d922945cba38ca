// GEMM of the CUDA backend on cuBLASLt: Y[M, N] = X[M, K] · W[N, K]^T (+ Y), BF16 inputs, F32
// accumulation, F32 or BF16 output, row-major with explicit row strides. Row-major is handled by
// the usual transpose trick: cuBLASLt is column-major, and a row-major [M, N] matrix with stride ld
// is the column-major [N, M] matrix with leading dimension ld, so we ask for
//   Y^T (N x M) = op_T(W^T as col-major K x N) · (X^T as col-major K x M).
// Algorithm choices come from cuBLASLt's heuristic, asked once per shape/stride/alignment and
// cached (the cache lives behind Gemm::handle_, so the public header stays CUDA-free). When the
// heuristic offers nothing (some misaligned strides), a plain tiled kernel does the product
// (gemm_fallback.cu). A Gemm is used by one thread at a time (the plan cache is unlocked); the
// first run of a shape asks the heuristic on the host, so warm shapes up before graph capture.
// Not here: quantised weights, epilogues (bias, activation) — the model does those in its own kernels.
#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cublaslt_loader.h"

namespace locr::kernels::cuda {

namespace detail {
void gemm_fallback(const uint16_t* x, int64_t M, int64_t K, int64_t ldx, const uint16_t* w, int64_t N, int64_t ldw,
                   void* y, bool y_bf16, int64_t ldy, bool accumulate, Stream s);
}  // namespace detail

namespace {

void check_lt(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(ErrorKind::kInternal, "cuBLASLt error in ", what, ": cublasStatus_t ", static_cast<int>(st));
}

#define LOCR_LT(call) check_lt((call), #call)

// Largest power of two (<= 256) dividing the address: what the algorithm may assume.
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al /= 2;
  return al;
}

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, uint32_t, uint32_t, uint32_t>;

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

struct Impl {
  explicit Impl(const CublasLt& l) : lt(l) {}
  const CublasLt& lt;  // the library the constructor opened, for the life of the process
  cublasLtHandle_t handle = nullptr;
  std::map<Key, Plan> plans;
  ~Impl() {
    for (auto& [k, p] : plans) {
      if (!p.desc) continue;  // a fallback entry owns nothing
      lt.MatrixLayoutDestroy(p.a);
      lt.MatrixLayoutDestroy(p.b);
      lt.MatrixLayoutDestroy(p.c);
      lt.MatmulDescDestroy(p.desc);
    }
    if (handle) lt.Destroy(handle);
  }
};

}  // namespace

Gemm::Gemm(size_t workspace_bytes) : workspace_(workspace_bytes) {
  auto* impl = new Impl(cublaslt_or_fail());
  const cublasStatus_t st = impl->lt.Create(&impl->handle);
  if (st != CUBLAS_STATUS_SUCCESS) {
    delete impl;
    check_lt(st, "cublasLtCreate");
  }
  handle_ = impl;
}

Gemm::~Gemm() { delete static_cast<Impl*>(handle_); }

void Gemm::run(const bf16* x, int64_t M, int64_t K, int64_t ldx, const bf16* w, int64_t N, int64_t ldw, void* y,
               bool y_bf16, int64_t ldy, bool accumulate, Stream s) {
  if (M == 0 || N == 0) return;
  if (M < 0 || N < 0 || K < 0 || ldx < K || ldw < K || ldy < N)
    fail(ErrorKind::kInternal, "Gemm::run: bad shape M=", M, " N=", N, " K=", K, " ldx=", ldx, " ldw=", ldw,
         " ldy=", ldy);
  const size_t ysize = y_bf16 ? 2 : 4;
  if (K == 0) {  // empty sum: Y = 0 (or unchanged when accumulating)
    if (!accumulate)
      LOCR_CUDA_CHECK(cudaMemset2DAsync(y, ldy * ysize, 0, N * ysize, M, s));
    return;
  }
  auto* impl = static_cast<Impl*>(handle_);
  const CublasLt& lt = impl->lt;
  const uint32_t al_x = alignment_of(x), al_w = alignment_of(w), al_y = alignment_of(y);
  const Key key{M, N, K, ldx, ldw, ldy, y_bf16, accumulate, al_x, al_w, al_y};
  auto it = impl->plans.find(key);
  if (it == impl->plans.end()) {
    Plan p;
    LOCR_LT(lt.MatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    LOCR_LT(lt.MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)));
    LOCR_LT(lt.MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)));
    // A = W viewed column-major: K x N, leading dimension ldw (transposed by op_T).
    LOCR_LT(lt.MatrixLayoutCreate(&p.a, CUDA_R_16BF, K, N, ldw));
    // B = X viewed column-major: K x M, leading dimension ldx.
    LOCR_LT(lt.MatrixLayoutCreate(&p.b, CUDA_R_16BF, K, M, ldx));
    // C = D = Y viewed column-major: N x M, leading dimension ldy.
    LOCR_LT(lt.MatrixLayoutCreate(&p.c, y_bf16 ? CUDA_R_16BF : CUDA_R_32F, N, M, ldy));

    cublasLtMatmulPreference_t pref = nullptr;
    LOCR_LT(lt.MatmulPreferenceCreate(&pref));
    const uint64_t ws = workspace_.bytes();
    lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_w, sizeof(al_w));
    lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_x, sizeof(al_x));
    lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_y, sizeof(al_y));
    lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_y, sizeof(al_y));
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    const cublasStatus_t st =
        lt.MatmulAlgoGetHeuristic(impl->handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &res, &found);
    lt.MatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      // No cuBLASLt algorithm for this shape/stride/alignment: remember that and use the plain
      // kernel (gemm_fallback.cu), which handles any strides.
      lt.MatrixLayoutDestroy(p.a);
      lt.MatrixLayoutDestroy(p.b);
      lt.MatrixLayoutDestroy(p.c);
      lt.MatmulDescDestroy(p.desc);
      p = Plan{};
    } else {
      p.algo = res.algo;
      p.workspace = res.workspaceSize;
    }
    it = impl->plans.emplace(key, p).first;
  }
  const Plan& p = it->second;
  if (!p.desc) {
    detail::gemm_fallback(x, M, K, ldx, w, N, ldw, y, y_bf16, ldy, accumulate, s);
    return;
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  LOCR_LT(lt.Matmul(impl->handle, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo,
                         workspace_.get(), p.workspace, s));
}

}  // namespace locr::kernels::cuda
