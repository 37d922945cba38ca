// kernels::View arithmetic, and the op contract Ops checks for every backend before its kernels
// run (kernels/ops_contract.cc): a view of the wrong memory kind, dtype or shape, a strided view
// where an op needs a contiguous one, an output over an input are aborts naming the op.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

using testing_util::hv;
using testing_util::make_matrix;

TEST(View, ColumnAndRowRanges) {
  std::vector<float> buf(4 * 10);
  const View all = hv(buf, 4, 10);
  EXPECT_TRUE(all.contiguous());
  const View mid = all.cols_range(3, 5);
  EXPECT_EQ(mid.data, buf.data() + 3);
  EXPECT_EQ(mid.rows, 4);
  EXPECT_EQ(mid.cols, 5);
  EXPECT_EQ(mid.stride, 10);
  EXPECT_FALSE(mid.contiguous());
  EXPECT_EQ(mid.span(), 3 * 10 + 5);
  const View rows = mid.rows_range(1, 2);
  EXPECT_EQ(rows.data, buf.data() + 10 + 3);
  EXPECT_EQ(rows.rows, 2);
  EXPECT_TRUE(all.rows_range(2, 1).contiguous());  // one row is contiguous whatever its stride
  EXPECT_EQ(mid.describe(), "F32 [4, 5] stride 10, host");
}

TEST(ViewDeathTest, RangesOutsideTheViewAbort) {
  std::vector<float> buf(4 * 10);
  EXPECT_DEATH(hv(buf, 4, 10).cols_range(8, 3), "columns \\[8, 11\\) of F32 \\[4, 10\\]");
  EXPECT_DEATH(hv(buf, 4, 10).rows_range(3, 2), "rows \\[3, 5\\)");
}

class OpContractDeathTest : public testing::Test {
 protected:
  std::unique_ptr<Ops> ops_ = make_ops("cpu-f32");
};

TEST_F(OpContractDeathTest, DeviceViewOnAHostBackend) {
  std::vector<float> x(6), y(6);
  const View dev(x.data(), DType::kF32, Memory::kDevice, 2, 3);
  EXPECT_DEATH(ops_->add(hv(y, 2, 3), dev), "add\\(x\\): F32 \\[2, 3\\], device is not in host memory");
}

TEST_F(OpContractDeathTest, ShapesThatDoNotFit) {
  Matrix w = make_matrix(DType::kF32, 4, 3, 1);
  std::vector<float> x(2 * 3), y(2 * 5);
  EXPECT_DEATH(ops_->matmul(hv(x, 2, 3), w, hv(y, 2, 5)), "matmul x F32 \\[2, 3\\], host . W\\[4, 3\\]");
  Matrix norm = make_matrix(DType::kF32, 1, 4, 2);
  EXPECT_DEATH(ops_->rms_norm(hv(x, 2, 3), norm, 1e-6f, hv(x, 2, 3)),
               "rms_norm of F32 \\[2, 3\\], host in groups of 4");
}

TEST_F(OpContractDeathTest, StridedViewWhereAnOpNeedsContiguousRows) {
  std::vector<float> a(2 * 8), b(2 * 8);
  EXPECT_DEATH(ops_->gelu(hv(a, 2, 8).cols_range(0, 4)), "gelu\\(x\\) needs a contiguous view");
  EXPECT_DEATH(ops_->add(hv(a, 2, 8).cols_range(0, 4), hv(b, 2, 4)), "add\\(y\\) needs a contiguous view");
}

TEST_F(OpContractDeathTest, OutputsOverInputs) {
  Matrix w = make_matrix(DType::kF32, 4, 4, 3);
  std::vector<float> x(2 * 8);
  // y over x: the GEMM would read what it already wrote.
  EXPECT_DEATH(ops_->matmul(hv(x, 2, 4), w, hv(x, 2, 4)), "matmul writes y over its input x");
  EXPECT_DEATH(ops_->matmul(hv(x, 2, 8).cols_range(0, 4), w, hv(x, 2, 8).cols_range(2, 4)),
               "matmul writes y over its input x");
  // Interleaved column ranges of one buffer do not overlap: allowed.
  ops_->matmul(hv(x, 2, 8).cols_range(0, 4), w, hv(x, 2, 8).cols_range(4, 4));
  // silu_mul's output may be its gate (in place), never its up.
  EXPECT_DEATH(ops_->silu_mul(hv(x, 2, 8).cols_range(0, 4), hv(x, 2, 8).cols_range(4, 4),
                              hv(x, 2, 8).cols_range(4, 4)),
               "silu_mul out overlaps up");
}

}  // namespace
}  // namespace locr::kernels
