// Devices, memory, streams and graphs of the CUDA backend: round trips through device memory,
// pinned memory, and a captured graph replayed twice.
#include <cstring>

#include "cuda_test_util.h"

namespace locr::kernels::cuda::test {
namespace {

TEST(CudaDevice, AvailableExplainsItself) {
  std::string why;
  const bool ok = available(&why);
  if (!ok) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << why;
  }
  EXPECT_GE(device_count(), 1);
  EXPECT_FALSE(device_name(0).empty());
  size_t free_b = 0, total_b = 0;
  mem_info(&free_b, &total_b);
  EXPECT_GT(total_b, 0u);
  EXPECT_LE(free_b, total_b);
}

// cuBLASLt is opened at run time; the toolkit this test was built with has it, GPU or not. On the
// GPU bundle's machine it is the toolkit's or the nvidia-cublas wheel's (run.sh sets LOCR_CUBLASLT).
TEST(CudaDevice, CublasLtIsOpenedAtRunTimeAndNamesItsFile) {
  const std::string path = cublaslt_path();
  ASSERT_FALSE(path.empty()) << "cuBLASLt could not be opened";
  EXPECT_NE(path.find("libcublasLt.so.13"), std::string::npos) << path;
  EXPECT_STRNE(built_archs(), "");
}

TEST(CudaDevice, CopiesAndMemset) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  std::vector<int32_t> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i * 7 - 3;
  Stream s = create_stream();
  DeviceBuffer a(h.size() * 4), b(h.size() * 4);
  EXPECT_EQ(a.bytes(), 4000u);
  copy_to_device(a.get(), h.data(), 4000, s);
  copy_device(b.get(), a.get(), 4000, s);
  std::vector<int32_t> back(1000);
  copy_to_host(back.data(), b.get(), 4000, s);
  synchronize(s);
  EXPECT_EQ(back, h);
  memset_device(b.get(), 0, 4000, s);
  copy_to_host(back.data(), b.get(), 4000, s);
  synchronize(s);
  for (int v : back) EXPECT_EQ(v, 0);
  DeviceBuffer moved = std::move(a);
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(moved.bytes(), 4000u);
  DeviceBuffer empty(0);
  EXPECT_EQ(empty.get(), nullptr);
  destroy_stream(s);
}

TEST(CudaDevice, PinnedAndGraphReplay) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  Stream s = create_stream();
  const int n = 257;
  auto* pin = static_cast<float*>(alloc_pinned(n * sizeof(float)));
  for (int i = 0; i < n; ++i) pin[i] = static_cast<float>(i);
  DeviceBuffer y(n * sizeof(float));
  DeviceBuffer x(n * sizeof(uint16_t));
  copy_to_device(y.get(), pin, n * sizeof(float), s);
  std::vector<uint16_t> ones(n, host_bf16(1.0f));
  copy_to_device(x.get(), ones.data(), n * 2, s);
  synchronize(s);
  Graph g;
  EXPECT_FALSE(g.ready());
  g.begin_capture(s);
  add_f32_bf16(y.as<float>(), x.as<bf16>(), n, s);  // y += 1 per replay
  g.end_capture(s);
  EXPECT_TRUE(g.ready());
  // Capturing records, it does not run: y is still 0..n-1.
  g.launch(s);
  g.launch(s);
  copy_to_host(pin, y.get(), n * sizeof(float), s);
  synchronize(s);
  for (int i = 0; i < n; ++i) EXPECT_EQ(pin[i], static_cast<float>(i) + 2.0f) << i;
  free_pinned(pin);
  destroy_stream(s);
}

}  // namespace
}  // namespace locr::kernels::cuda::test
