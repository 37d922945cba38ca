// cuBLASLt opened with dlopen (cublaslt_loader.h).
#include "kernels/cuda/cublaslt_loader.h"

#include <dlfcn.h>

#include <cstdlib>

#include "core/error.h"
#include "kernels/cuda/cuda_api.h"

namespace locr::kernels::cuda {

namespace {

struct Loaded {
  CublasLt lib{};
  bool ok = false;
  std::string why;
};

const std::string kSoname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

template <typename F>
bool resolve(void* h, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

Loaded open_library() {
  Loaded out;
  std::string tried;
  void* h = nullptr;
  std::string path;
  auto attempt = [&](const std::string& p) {
    if (h) return;
    h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      path = p;
    } else {
      const char* e = dlerror();
      tried += "\n  " + p + ": " + (e ? e : "not found");
    }
  };
  if (const char* env = std::getenv("LOCR_CUBLASLT"); env && *env) attempt(env);
  attempt(kSoname);  // LD_LIBRARY_PATH, RUNPATH, ld.so.cache
  attempt("/usr/local/cuda/lib64/" + kSoname);
  attempt("/usr/local/cuda/targets/x86_64-linux/lib/" + kSoname);
  if (!h) {
    out.why = "cuBLASLt (" + kSoname + ", CUDA " + std::to_string(CUBLAS_VER_MAJOR) +
              ") was not found; tried:" + tried +
              "\n  install the CUDA toolkit or `pip install nvidia-cublas` and put its lib folder on LD_LIBRARY_PATH, "
              "or set LOCR_CUBLASLT to the file";
    return out;
  }
  Dl_info info{};
  // Where the loader found it (the soname alone says nothing).
  void* any = dlsym(h, "cublasLtCreate");
  if (any && dladdr(any, &info) && info.dli_fname) path = info.dli_fname;
  std::string missing;
  CublasLt& l = out.lib;
  resolve(h, "cublasLtCreate", l.Create, missing);
  resolve(h, "cublasLtDestroy", l.Destroy, missing);
  resolve(h, "cublasLtMatmulDescCreate", l.MatmulDescCreate, missing);
  resolve(h, "cublasLtMatmulDescDestroy", l.MatmulDescDestroy, missing);
  resolve(h, "cublasLtMatmulDescSetAttribute", l.MatmulDescSetAttribute, missing);
  resolve(h, "cublasLtMatrixLayoutCreate", l.MatrixLayoutCreate, missing);
  resolve(h, "cublasLtMatrixLayoutDestroy", l.MatrixLayoutDestroy, missing);
  resolve(h, "cublasLtMatmulPreferenceCreate", l.MatmulPreferenceCreate, missing);
  resolve(h, "cublasLtMatmulPreferenceDestroy", l.MatmulPreferenceDestroy, missing);
  resolve(h, "cublasLtMatmulPreferenceSetAttribute", l.MatmulPreferenceSetAttribute, missing);
  resolve(h, "cublasLtMatmulAlgoGetHeuristic", l.MatmulAlgoGetHeuristic, missing);
  resolve(h, "cublasLtMatmul", l.Matmul, missing);
  if (!missing.empty()) {
    out.why = "cuBLASLt at " + path + " lacks " + missing + " (a library older than CUDA " +
              std::to_string(CUBLAS_VER_MAJOR) + "?)";
    dlclose(h);
    return out;
  }
  l.path = path;
  out.ok = true;  // the handle stays open for the life of the process
  return out;
}

const Loaded& loaded() {
  static const Loaded l = open_library();  // thread-safe once
  return l;
}

}  // namespace

const CublasLt* cublaslt(std::string* why) {
  const Loaded& l = loaded();
  if (!l.ok) {
    if (why) *why = l.why;
    return nullptr;
  }
  return &l.lib;
}

std::string cublaslt_path() {
  const CublasLt* l = cublaslt();
  return l ? l->path : std::string();
}

const CublasLt& cublaslt_or_fail() {
  std::string why;
  const CublasLt* l = cublaslt(&why);
  if (!l) fail(ErrorKind::kInternal, why);
  return *l;
}

}  // namespace locr::kernels::cuda
