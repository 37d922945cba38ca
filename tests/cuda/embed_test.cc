// Embedding lookup, row scatter and row gather: pure copies (BF16 -> F32 is exact), so the
// results must equal a scalar loop bit for bit. Also the projector's patch merge against a local
// copy of model::patch_merge's loop (not linking locr_model).
#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

TEST(CudaEmbed, EmbedMatchesRef) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const int64_t vocab = 1001, dim = 129;
  std::vector<uint16_t> tb;
  random_bf16(vocab * dim, -1, 1, 81, &tb);
  const std::vector<int32_t> ids = {0, 1000, 5, 5, 999, 17, 0, 333};
  Matrix t;
  t.dtype = DType::kBF16;
  t.rows = vocab;
  t.cols = dim;
  t.data = tb.data();
  std::vector<float> want(ids.size() * dim);
  const auto ref = make_ops("ref");
  ref->embed(t, ref->i32(ids.data(), static_cast<int64_t>(ids.size())),
             ref->f32(want.data(), static_cast<int64_t>(ids.size()), dim));
  Dev<uint16_t> dt(tb);
  Dev<int32_t> di(ids);
  Dev<float> out(static_cast<int64_t>(want.size()));
  embed(dt.get(), di.get(), static_cast<int64_t>(ids.size()), dim, out.get(), nullptr);
  EXPECT_EQ(out.host(), want);
}

TEST(CudaEmbed, ScatterAndGatherRows) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const int64_t rows = 40, dim = 33;
  const std::vector<float> src = random_f32(7 * dim, -1, 1, 91);
  const std::vector<int32_t> where = {3, 4, 5, 39, 0, 20, 21};
  std::vector<float> base = random_f32(rows * dim, -1, 1, 92), want = base;
  for (size_t i = 0; i < where.size(); ++i)
    for (int64_t c = 0; c < dim; ++c) want[where[i] * dim + c] = src[i * dim + c];
  Dev<float> ds(src), dd(base);
  Dev<int32_t> dw(where);
  scatter_rows(ds.get(), dw.get(), static_cast<int64_t>(where.size()), dim, dd.get(), nullptr);
  EXPECT_EQ(dd.host(), want);

  const std::vector<int32_t> pick = {39, 0, 0, 21};
  std::vector<float> g_want(pick.size() * dim);
  for (size_t i = 0; i < pick.size(); ++i)
    for (int64_t c = 0; c < dim; ++c) g_want[i * dim + c] = want[pick[i] * dim + c];
  Dev<int32_t> dp(pick);
  Dev<float> g(static_cast<int64_t>(g_want.size()));
  gather_rows(dd.get(), dp.get(), static_cast<int64_t>(pick.size()), dim, g.get(), nullptr);
  EXPECT_EQ(g.host(), g_want);
}

// model::patch_merge, on bf16 bits.
std::vector<uint16_t> merge_ref(const std::vector<uint16_t>& in, int gh, int gw, int64_t d, int m) {
  const int oh = gh / m, ow = gw / m;
  const int64_t mm = static_cast<int64_t>(m) * m;
  std::vector<uint16_t> out(static_cast<size_t>(oh) * ow * d * mm);
  for (int i = 0; i < oh; ++i)
    for (int j = 0; j < ow; ++j) {
      uint16_t* o = out.data() + (static_cast<int64_t>(i) * ow + j) * d * mm;
      for (int a = 0; a < m; ++a)
        for (int b = 0; b < m; ++b) {
          const uint16_t* s = in.data() + (static_cast<int64_t>(m * i + a) * gw + (m * j + b)) * d;
          for (int64_t c = 0; c < d; ++c) o[c * mm + a * m + b] = s[c];
        }
    }
  return out;
}

TEST(CudaPatchMerge, MatchesScalarLoop) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  struct Case { int gh, gw; int64_t d; int m; };
  for (const Case& c : {Case{2, 2, 1, 2}, Case{5, 7, 33, 2}, Case{4, 6, 1024, 2}, Case{7, 9, 31, 3}, Case{3, 3, 5, 1}}) {
    std::vector<uint16_t> in;
    random_bf16(static_cast<int64_t>(c.gh) * c.gw * c.d, -1, 1, 101, &in);
    const std::vector<uint16_t> want = merge_ref(in, c.gh, c.gw, c.d, c.m);
    Dev<uint16_t> di(in), dout(static_cast<int64_t>(want.size()));
    patch_merge(di.get(), c.gh, c.gw, c.d, c.m, dout.get(), nullptr);
    EXPECT_EQ(dout.host(), want) << c.gh << "x" << c.gw << " d=" << c.d << " m=" << c.m;
  }
}

}  // namespace
}  // namespace locr::kernels::cuda::test
