// kernels/devices.h: what the model and the frontends ask instead of the CUDA API.
#include "kernels/devices.h"

#include <gtest/gtest.h>

#include "core/error.h"
#ifdef LOCR_HAVE_CUDA
#include "kernels/cuda/cuda_api.h"
#endif

namespace locr::kernels {
namespace {

TEST(Devices, CpuBackendsAreAlwaysUsable) {
  for (const char* b : {"ref", "cpu-f32", "cpu-bf16"}) EXPECT_NO_THROW(check_backend_usable(b)) << b;
}

TEST(Devices, CudaAnswersAgreeWithTheBuildAndTheMachine) {
  std::string why;
  const bool usable = cuda_usable(&why);
#ifdef LOCR_HAVE_CUDA
  EXPECT_TRUE(built_with_cuda());
  std::string cuda_why;
  EXPECT_EQ(usable, cuda::available(&cuda_why));
  if (!usable) {
    EXPECT_EQ(why, cuda_why);
  }
#else
  EXPECT_FALSE(built_with_cuda());
  EXPECT_FALSE(usable);
  EXPECT_NE(why.find("built without CUDA; rebuild with -DLOCR_CUDA=ON"), std::string::npos) << why;
#endif
  if (usable) {
    EXPECT_NO_THROW(check_backend_usable("cuda"));
  } else {
    try {
      check_backend_usable("cuda");
      ADD_FAILURE() << "no error for an unusable CUDA backend";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace locr::kernels
