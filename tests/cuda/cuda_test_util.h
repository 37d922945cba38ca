// Shared helpers of tests/cuda: the skip when no usable GPU is present, device copies of host
// vectors, BF16 rounding of test inputs (so the oracle sees exactly what the GPU sees) and
// deterministic random data.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cuda/cuda_api.h"

// First statement of every test: reported as SKIPPED (never as passed) without a usable GPU.
#define LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE()                             \
  do {                                                                   \
    std::string why_;                                                    \
    if (!::locr::kernels::cuda::available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

namespace locr::kernels::cuda::test {

// A device copy of a host vector.
template <class T>
struct Dev {
  DeviceBuffer buf;
  int64_t n = 0;
  Dev() = default;
  explicit Dev(int64_t count) : buf(static_cast<size_t>(count) * sizeof(T)), n(count) {
    memset_device(buf.get(), 0, buf.bytes(), nullptr);
  }
  explicit Dev(const std::vector<T>& h) : buf(h.size() * sizeof(T)), n(static_cast<int64_t>(h.size())) {
    copy_to_device(buf.get(), h.data(), buf.bytes(), nullptr);
  }
  T* get() const { return buf.as<T>(); }
  std::vector<T> host() const {
    std::vector<T> h(n);
    copy_to_host(h.data(), buf.get(), h.size() * sizeof(T), nullptr);
    synchronize(nullptr);
    return h;
  }
};

// Host-side scalar conversions (the names f32_to_bf16/bf16_to_f32 are the device ops here).
inline uint16_t host_bf16(float v) { return ::locr::f32_to_bf16(v); }
inline float host_f32(uint16_t h) { return ::locr::bf16_to_f32(h); }

inline float round_bf16(float v) { return host_f32(host_bf16(v)); }

// n values uniform in [lo, hi], already rounded to bf16; `bits` gets their bf16 encoding.
inline std::vector<float> random_bf16(int64_t n, float lo, float hi, uint32_t seed, std::vector<uint16_t>* bits) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  bits->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    (*bits)[i] = host_bf16(u(rng));
    v[i] = host_f32((*bits)[i]);
  }
  return v;
}

inline std::vector<float> random_f32(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline std::vector<float> to_f32(const std::vector<uint16_t>& bits) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = host_f32(bits[i]);
  return v;
}

}  // namespace locr::kernels::cuda::test
