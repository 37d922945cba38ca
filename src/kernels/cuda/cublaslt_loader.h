// cuBLASLt, opened at run time (dlopen) instead of linked: a CUDA build of locr then starts, and
// runs its CPU backends, on a machine without the CUDA toolkit or the nvidia-cublas wheel, and
// says which library it looked for and where when the GPU path is asked for. Only the functions
// gemm.cc calls are resolved; the types come from <cublasLt.h>.
// Search order: $LOCR_CUBLASLT (a file), then libcublasLt.so.<major> as the dynamic loader finds
// it (LD_LIBRARY_PATH, the executable's RUNPATH, ld.so.cache), then the CUDA toolkit's lib64.
#pragma once

#include <cublasLt.h>

#include <string>

namespace locr::kernels::cuda {

struct CublasLt {
  cublasStatus_t (*Create)(cublasLtHandle_t*);
  cublasStatus_t (*Destroy)(cublasLtHandle_t);
  cublasStatus_t (*MatmulDescCreate)(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t);
  cublasStatus_t (*MatmulDescDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*MatmulDescSetAttribute)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*, size_t);
  cublasStatus_t (*MatrixLayoutCreate)(cublasLtMatrixLayout_t*, cudaDataType, uint64_t, uint64_t, int64_t);
  cublasStatus_t (*MatrixLayoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*MatmulPreferenceCreate)(cublasLtMatmulPreference_t*);
  cublasStatus_t (*MatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*MatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                 const void*, size_t);
  cublasStatus_t (*MatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                           cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                           cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t*, int*);
  cublasStatus_t (*Matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,
                           const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t,
                           void*, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
  std::string path;  // the file that was opened
};

// The library, opened once (thread-safe); nullptr when it cannot be found or lacks a function, with
// `why` naming the library, the places searched and what to install.
const CublasLt* cublaslt(std::string* why = nullptr);

// cublaslt(), or an Error(kInternal) carrying that message.
const CublasLt& cublaslt_or_fail();

}  // namespace locr::kernels::cuda
