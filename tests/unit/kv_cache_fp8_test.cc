// The FP8 KV cache (--kv-cache-dtype fp8): KvPool's E4M3 rows with a scale per token and kv head,
// its size (so the same memory holds about twice the tokens of a BF16 cache), the option's
// spellings, and the engine's block count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "core/error.h"
#include "core/fp8.h"
#include "kernels/devices.h"
#include "model/kv_cache_dtype.h"
#include "model/kv_pool.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/engine.h"
#include "runtime/generate.h"

namespace locr::model {
namespace {

TextConfig full_size_text() { return TextConfig{}; }  // LightOnOCR-2-1B: 28 layers, 8 kv heads of 128

TEST(KvPoolFp8, StoreScalesEachHeadOfEachTokenByItsOwnMaximum) {
  TextConfig tc = full_size_text();
  tc.num_hidden_layers = 2;
  tc.num_key_value_heads = 3;
  const int64_t hd = tc.head_dim, w = 3 * hd;
  KvPool pool(tc, 2, 4, DType::kF8E4M3);
  ASSERT_NE(pool.k_scale(1), nullptr);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  // Heads of very different magnitudes (as the full-size random model's keys are: hundreds), one
  // with an outlier, one all zero.
  const float mags[3] = {1e-3f, 300.0f, 2.0f};
  for (int64_t slot : {int64_t(0), int64_t(5), int64_t(7)}) {
    std::vector<float> k(w), v(w);
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t d = 0; d < hd; ++d) {
        k[h * hd + d] = mags[h] * nd(rng);
        v[h * hd + d] = slot == 5 && h == 2 ? 0.0f : mags[2 - h] * nd(rng);
      }
    k[2 * hd + 17] = 5000.0f;  // outlier: the rest of its head loses range, not the other heads
    pool.store(1, slot, k.data(), v.data());
    const auto* kq = static_cast<const uint8_t*>(pool.k(1)) + slot * w;
    const auto* vq = static_cast<const uint8_t*>(pool.v(1)) + slot * w;
    for (int64_t h = 0; h < 3; ++h) {
      for (int which = 0; which < 2; ++which) {
        const float* x = (which ? v.data() : k.data()) + h * hd;
        const uint8_t* q = (which ? vq : kq) + h * hd;
        const float s = (which ? pool.v_scale(1) : pool.k_scale(1))[slot * 3 + h];
        float amax = 0;
        for (int64_t d = 0; d < hd; ++d) amax = std::max(amax, std::fabs(x[d]));
        SCOPED_TRACE(testing::Message() << "slot " << slot << " head " << h << (which ? " v" : " k"));
        if (amax == 0) {
          for (int64_t d = 0; d < hd; ++d) EXPECT_EQ(fp8_e4m3_to_f32(q[d]), 0.0f);
          continue;
        }
        EXPECT_FLOAT_EQ(s, amax / 448.0f);
        for (int64_t d = 0; d < hd; ++d) {
          const float got = fp8_e4m3_to_f32(q[d]) * s;
          // Round to nearest: half a step, 2^-4 relative in the normal range, 2^-10 * s below it.
          const double tol = std::max(std::fabs(x[d]) * 0.0625, s * std::ldexp(1.0, -10)) * (1 + 1e-6);
          ASSERT_LE(std::fabs(got - x[d]), tol) << "d " << d << ": " << x[d] << " -> " << got;
          if (std::fabs(x[d]) == amax) {
            EXPECT_NEAR(got, x[d], 1e-6 * amax);  // the maximum maps to 448
          }
        }
      }
    }
  }
}

TEST(KvPoolFp8, NonFiniteInputsStayVisible) {
  TextConfig tc = full_size_text();
  tc.num_hidden_layers = 1;
  tc.num_key_value_heads = 1;
  KvPool pool(tc, 1, 1, DType::kF8E4M3);
  std::vector<float> k(tc.head_dim, 1.0f), v(tc.head_dim, 1.0f);
  k[3] = NAN;
  v[4] = INFINITY;
  pool.store(0, 0, k.data(), v.data());
  EXPECT_TRUE(std::isnan(pool.k_scale(0)[0]));
  EXPECT_TRUE(std::isnan(pool.v_scale(0)[0]));
}

TEST(KvPoolFp8, BlockBytesCountCodesAndScales) {
  const TextConfig tc = full_size_text();
  const int64_t f32 = KvPool::bytes_per_block(tc, 16, DType::kF32);
  const int64_t bf16 = KvPool::bytes_per_block(tc, 16, DType::kBF16);
  const int64_t fp8 = KvPool::bytes_per_block(tc, 16, DType::kF8E4M3);
  EXPECT_EQ(bf16, 2LL * 28 * 16 * 8 * 128 * 2);
  EXPECT_EQ(fp8, 2LL * 28 * 16 * 8 * (128 + 4));  // a byte per element plus an f32 scale per head
  // The same memory holds 256 / 132 = 1.94x the tokens of BF16 and 3.88x those of F32.
  EXPECT_NEAR(static_cast<double>(bf16) / fp8, 256.0 / 132, 1e-12);
  EXPECT_NEAR(static_cast<double>(f32) / fp8, 512.0 / 132, 1e-12);
}

TEST(KvCacheDtype, VllmSpellings) {
  EXPECT_FALSE(parse_kv_cache_dtype("").has_value());
  EXPECT_FALSE(parse_kv_cache_dtype("auto").has_value());
  EXPECT_EQ(parse_kv_cache_dtype("bfloat16"), DType::kBF16);
  EXPECT_EQ(parse_kv_cache_dtype("fp8"), DType::kF8E4M3);
  EXPECT_EQ(parse_kv_cache_dtype("fp8_e4m3"), DType::kF8E4M3);
  for (const char* bad : {"fp8_e5m2", "int8", "FP8", "float32"}) {
    try {
      parse_kv_cache_dtype(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(bad), std::string::npos) << msg;
      EXPECT_NE(msg.find("accepted: auto, bfloat16, fp8, fp8_e4m3"), std::string::npos) << msg;
      EXPECT_EQ(e.kind(), std::string(bad) == "fp8_e5m2" ? ErrorKind::kUnsupported : ErrorKind::kInvalidArgument);
    }
  }
}

std::unique_ptr<LightOnOcr> tiny(const std::string& backend, const std::string& kv) {
  LoadOptions lo;
  lo.backend = backend;
  lo.kv_cache_dtype = kv;
  return LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", lo);
}

TEST(KvCacheDtype, LoadOptionPicksTheDecodersKvType) {
  EXPECT_EQ(tiny("cpu-bf16", "")->decoder().kv_dtype(), DType::kBF16);
  EXPECT_EQ(tiny("cpu-f32", "auto")->decoder().kv_dtype(), DType::kF32);
  EXPECT_EQ(tiny("cpu-f32", "bfloat16")->decoder().kv_dtype(), DType::kBF16);
  EXPECT_EQ(tiny("cpu-bf16", "fp8")->decoder().kv_dtype(), DType::kF8E4M3);
  EXPECT_EQ(tiny("ref", "fp8_e4m3")->decoder().kv_dtype(), DType::kF8E4M3);
  EXPECT_THROW(tiny("cpu-bf16", "fp8_e5m2"), Error);
  // The CUDA backend keeps an FP8 cache too: only a build or machine without it refuses, naming it.
  if (kernels::cuda_usable()) {
    EXPECT_EQ(tiny("cuda", "fp8")->decoder().kv_dtype(), DType::kF8E4M3);
    EXPECT_EQ(tiny("cuda", "")->decoder().kv_dtype(), DType::kBF16);
  } else {
    try {
      tiny("cuda", "fp8");
      ADD_FAILURE() << "cuda accepted without a usable device";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    }
  }
}

TEST(KvCacheDtype, EngineHoldsAboutTwiceTheBlocksOfBf16InTheSameMemory) {
  auto bf = tiny("cpu-bf16", "bfloat16"), f8 = tiny("cpu-bf16", "fp8");
  const TextConfig& tc = bf->config().text;
  runtime::EngineOptions eo;
  eo.max_num_seqs = 2;
  eo.max_model_len = 64;
  eo.block_size = 16;
  eo.kv_cache_bytes = 40 * KvPool::bytes_per_block(tc, 16, DType::kBF16);
  runtime::Engine e_bf(*bf, eo), e_f8(*f8, eo);
  EXPECT_EQ(e_bf.kv_blocks_total(), 40);
  EXPECT_EQ(e_f8.kv_blocks_total(), eo.kv_cache_bytes / KvPool::bytes_per_block(tc, 16, DType::kF8E4M3));
  const double want = 2.0 * tc.head_dim / (tc.head_dim + 4);  // the f32 scale per head and token
  EXPECT_NEAR(static_cast<double>(e_f8.kv_blocks_total()) / e_bf.kv_blocks_total(), want, 0.05);
  EXPECT_GT(e_f8.kv_blocks_total(), e_bf.kv_blocks_total() * 3 / 2);
  // And an FP8-KV engine generates: greedy tokens of a short prompt equal the single-sequence loop's.
  const std::string text = "Hello, how are you?";
  runtime::RequestInput in;
  in.prompt_ids = f8->build_prompt(LightOnOcr::make_messages(nullptr, &text, 0), {}).ids;
  in.decode.max_tokens = 6;
  in.decode.sampling.temperature = 0;
  auto stream = e_f8.submit(in);
  std::vector<int32_t> got;
  for (;;) {
    auto ev = stream->next(std::chrono::seconds(30));
    ASSERT_TRUE(ev.has_value());
    if (ev->token >= 0) got.push_back(ev->token);
    if (ev->finished) break;
  }
  Prompt p;
  p.ids = in.prompt_ids;
  runtime::DecodeParams go;
  go.max_tokens = 6;
  go.sampling.temperature = 0;
  EXPECT_EQ(got, runtime::generate(*f8, p, go).tokens);
}

}  // namespace
}  // namespace locr::model
