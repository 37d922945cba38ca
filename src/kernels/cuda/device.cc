// Devices, memory, streams and CUDA graphs of the CUDA backend (cuda_api.h), on the CUDA runtime
// API. Every failing call throws locr::Error(kInternal) naming the call and CUDA's error string;
// device_count/available never throw (no driver, no device or no cuBLASLt is an answer, not an error).
// Not here: kernels (the *.cu files), GEMM (gemm.cc).
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cublaslt_loader.h"

namespace locr::kernels::cuda {

namespace detail {

cudaError_t probe_kernel_image();  // gemm_fallback.cu

void throw_cuda(cudaError_t err, const char* what, const char* file, int line) {
  fail(ErrorKind::kInternal, "CUDA error in ", what, " (", file, ":", line, "): ", cudaGetErrorName(err), ": ",
       cudaGetErrorString(err));
}

}  // namespace detail

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls do not see it
    return 0;
  }
  return n;
}

bool available(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = "cannot query CUDA device 0";
    return false;
  }
  if (prop.major < 8) {  // BF16 tensor cores (mma.h bf16 fragments) need sm_80 or newer
    if (why) *why = std::string("CUDA device 0 (") + prop.name + ") is below compute capability 8.0";
    return false;
  }
  const cudaError_t img = detail::probe_kernel_image();  // on the current device
  if (img != cudaSuccess) {
    if (why)
      *why = std::string("this build has no kernels for CUDA device 0 (") + prop.name + ", sm_" +
             std::to_string(prop.major) + std::to_string(prop.minor) + "; built for LOCR_CUDA_ARCHS=" +
             LOCR_CUDA_ARCHS_STR + "): " + cudaGetErrorString(img);
    return false;
  }
  std::string lt_why;
  if (!cublaslt(&lt_why)) {  // the GEMMs need it; the device alone is not enough
    if (why) *why = lt_why;
    return false;
  }
  if (why) why->clear();
  return true;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  LOCR_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

const char* built_archs() { return LOCR_CUDA_ARCHS_STR; }

std::string device_arch(int device) {
  cudaDeviceProp prop{};
  LOCR_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
}

void set_device(int device) { LOCR_CUDA_CHECK(cudaSetDevice(device)); }

void mem_info(size_t* free_bytes, size_t* total_bytes) {
  size_t f = 0, t = 0;
  LOCR_CUDA_CHECK(cudaMemGetInfo(&f, &t));
  if (free_bytes) *free_bytes = f;
  if (total_bytes) *total_bytes = t;
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail(ErrorKind::kInternal, "cudaMalloc of ", bytes, " bytes failed: ", cudaGetErrorString(err));
  }
  ptr_ = p;
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);  // never throws from a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

Stream create_stream() {
  cudaStream_t s = nullptr;
  LOCR_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void destroy_stream(Stream s) {
  if (s) LOCR_CUDA_CHECK(cudaStreamDestroy(s));
}

void synchronize(Stream s) { LOCR_CUDA_CHECK(cudaStreamSynchronize(s)); }

void copy_to_device(void* dst, const void* host_src, size_t bytes, Stream s) {
  if (bytes) LOCR_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, s));
}

void copy_to_host(void* host_dst, const void* src, size_t bytes, Stream s) {
  if (bytes) LOCR_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, s));
}

void copy_device(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) LOCR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
}

void copy_device_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows,
                    Stream s) {
  if (width && rows)
    LOCR_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDeviceToDevice, s));
}

void memset_device(void* dst, int value, size_t bytes, Stream s) {
  if (bytes) LOCR_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, s));
}

void* alloc_pinned(size_t bytes) {
  void* p = nullptr;
  if (bytes) LOCR_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void free_pinned(void* p) {
  if (p) LOCR_CUDA_CHECK(cudaFreeHost(p));
}

// ---- Graph ----

Graph::~Graph() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

void Graph::begin_capture(Stream s) {
  // Thread-local mode: other threads may keep calling unsafe APIs (e.g. cudaMalloc) meanwhile.
  LOCR_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
}

void Graph::end_capture(Stream s) {
  cudaGraph_t g = nullptr;
  LOCR_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t e = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&e, g, 0);
  if (err != cudaSuccess) {
    cudaGraphDestroy(g);
    detail::check(err, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  graph_ = g;
  exec_ = e;
}

void Graph::launch(Stream s) const {
  if (!exec_) fail(ErrorKind::kInternal, "Graph::launch before a graph was captured");
  LOCR_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), s));
}

}  // namespace locr::kernels::cuda
