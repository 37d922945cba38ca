// `locr quantize` for the Qwen3.5 family (LightOnOCR-3-0.8B / -4B): a model directory written as the
// two GGUF files llama.cpp's convert_hf_to_gguf.py writes for it (Qwen3_5TextModel: arch `qwen35`;
// Qwen3VLVisionModel: an mmproj of arch `clip`, projector `qwen3vl_merger`), the inverse of
// model/qwen35/gguf.h. As the converter of llama-cpp-python 0.3.36 (the one
// tools/reference/make_gguf_qwen35_fixtures.py runs): its metadata keys in its order, its tensor order
// (shard by shard, each in name order), each tensor's transform (norms 1 + w except the DeltaNet's,
// ssm_a = -exp(A_log), the 4B layout's value heads reordered to tiled order, the conv kernel squeezed,
// the Conv3d split into its two frames) and type:
//
//   --type  2-D weights (token_embd, output incl.)   norms, vectors, biases, ssm_conv1d,   v.patch_embd
//                                                    v.position_embd
//   f32     F32                                      F32                                   F32
//   f16     F16                                      F32                                   F16
//   bf16    BF16                                     F32                                   F32
//   q8_0    Q8_0, F16 where rows are not 32-blocks   F32                                   F32
//   q4_k_m  text: llama-quantize's Q4_K_M mix (Q4_K; the head, or a tied token_embd, Q6_K; attn_qkv /
//           attn_v and ffn_down of the "more bits" layers Q6_K; its fallbacks Q4_K -> Q5_0, Q6_K -> Q8_0,
//           then F16), in its tensor order with general.quantization_version / file_type last, as
//           model/gguf_export_common.h's q4_k_m; the mmproj as with q8_0
//
// Provenance metadata as
// model/gguf_export_common.h says (general.name from the directory's name; no basename / finetune
// guesses).
// Knowingly different: ssm_a = -exp(A_log) is computed with libm's expf, the converter's with
// torch's, whose vectorised exp (16 heads at a time, as the real models have; the fixtures' 2 and 4
// heads take its scalar path) differs by one ulp on some values: 4 of the 18 DeltaNet layers of a
// random full-size 0.8B differ there by 1 ulp, every other byte equal (docs/tools.md).
#pragma once

#include <string>

#include "model/gguf_export_common.h"

namespace locr::model::qwen35 {

// Writes the Qwen3.5 model in `model_dir` to text_path and mmproj_path; checked before a byte is
// written, each file atomically; fallbacks logged and returned, as export_gguf.
GgufExportResult export_gguf(const std::string& model_dir, const std::string& text_path,
                             const std::string& mmproj_path, GgufOutType type);

}  // namespace locr::model::qwen35
