// `--quantization q4_k_m` on a Qwen3.5 model (model/qwen35/weights.h quantize_weights) is the mix
// `locr quantize --type q4_k_m` writes, which is llama.cpp's llama-quantize's byte for byte
// (tests/server/test_quantize.py): on make-model's tiny-qwen35-k (rows of whole 256-blocks, 8
// layers, the 4B's value-head layout, untied head), every matrix quantized at load has the type and
// the bytes of the same tensor bound from the q4_k_m GGUF files (the embedding table, which a load
// keeps as stored, aside), and the vision tower is Q8_0 as in their mmproj.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "../common/qwen35_matrices.h"
#include "io/safetensors.h"
#include "model/gguf_export_common.h"
#include "model/qwen35/gguf.h"
#include "model/qwen35/gguf_export.h"
#include "toolkit/synth_model.h"

namespace fs = std::filesystem;

namespace locr::model::qwen35 {
namespace {

TEST(Qwen35Q4KM, AtLoadEqualsTheGgufMix) {
  const fs::path d = fs::temp_directory_path() / ("locr_qwen35_q4km_" + std::to_string(::getpid()));
  fs::create_directories(d);
  toolkit::MakeModelOptions o;
  o.preset = "tiny-qwen35-k";
  o.out_dir = (d / "m").string();
  toolkit::make_model(o);
  const std::string text = (d / "k.gguf").string();
  model::qwen35::export_gguf(o.out_dir, text, default_mmproj_path(text), GgufOutType::kQ4_K_M);

  const io::SafetensorsSet st = io::SafetensorsSet::open_dir(o.out_dir);
  const Config cfg = Config::from_file(o.out_dir + "/config.json");
  Weights loaded = load_weights(st, cfg);
  tile_value_heads(loaded, cfg.text);  // the files' value-head order (the layout has 2 per key head)
  const QuantizeCounts n = quantize_weights(loaded, "q4_k_m");
  const GgufFiles f = open_gguf(io::GgufFile::open(text), default_mmproj_path(text));
  const Weights file = load_gguf_weights(f, gguf_config(f), DType::kF32, /*keep_quantized=*/true);
  // 8 layers (6 DeltaNet, 2 attention): Q6_K for attn_qkv / v and down in the more-bits layers 0, 3,
  // 6, 7 and for the head; Q4_K for the rest of the text; the vision tower's 10 matrices Q8_0.
  EXPECT_EQ(n.q6_k, 9);
  EXPECT_EQ(n.q8_0, 10);
  const auto a = matrices(loaded), b = matrices(file);
  ASSERT_EQ(a.size(), b.size());
  int quantized = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& [name, m] = a[i];
    const Matrix& g = b[i].second;
    if (name == "embed_tokens") continue;  // kept as stored at load; Q4_K in the file (untied)
    const bool q = m.dtype == DType::kQ4_K || m.dtype == DType::kQ6_K || m.dtype == DType::kQ8_0;
    if (!q) continue;  // norms, vectors, conv, patch embedding, position table: as stored in both
    ++quantized;
    ASSERT_EQ(m.dtype, g.dtype) << name;
    ASSERT_EQ(m.rows, g.rows) << name;
    const size_t bytes = static_cast<size_t>(dtype_row_bytes(m.dtype, m.cols) * m.rows);
    EXPECT_EQ(0, std::memcmp(m.data, g.data, bytes)) << name << ": " << dtype_name(m.dtype) << " bytes differ";
  }
  EXPECT_EQ(quantized, n.total());
  fs::remove_all(d);
}

}  // namespace
}  // namespace locr::model::qwen35
