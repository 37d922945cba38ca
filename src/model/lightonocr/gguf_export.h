// `locr quantize`: a LightOnOCR model directory (safetensors, HF layout) written as the two GGUF
// files llama.cpp's convert_hf_to_gguf.py writes for it, and that llama.cpp (and locr) load: a text
// model of arch `qwen3` and an mmproj of arch `clip` with projector type `lightonocr`. The inverse
// of model/lightonocr/gguf_checkpoint.h; tensor names, metadata keys, their order and types, the
// tensor order (the checkpoint's, by name) and each tensor's type are the converter's (llama.cpp as
// vendored by llama-cpp-python 0.3.36, the one tools/reference/make_gguf_model_fixtures.py runs):
//
//   --type   2-D weights               1-D (norms)   v.patch_embd, mm.patch_merger   general.file_type
//   f32      F32                       F32           F32                             0
//   f16      F16                       F32           F16                             1
//   bf16     BF16                      F32           F32                             32
//   q8_0     Q8_0 (kernels' quantizer, F32           F32                             7
//            bit-equal to llama.cpp's;
//            F16 where rows are not
//            whole 32-blocks)
//   q4_k_m   text: llama-quantize's    F32           F32                             15 (mmproj: 7)
//            Q4_K_M mix (Q4_K; head,
//            more-bits attn_v/ffn_down
//            Q6_K; the fallbacks
//            of model/gguf_export_common.h), mmproj as q8_0
//
// The vision attn_q / attn_k rows are permuted as the converter's LlamaModel.permute does (the
// loader's unpermute_rows undoes it); the text model's are not (Qwen3). The tokenizer is written
// as tokenizer.ggml.* (gpt2 / qwen2, tokens with their types, merges, special ids, add_bos/eos),
// with tokenizer.chat_template; general.sampling.* from generation_config.json.
//
// The --type, the fallbacks for rows that are not whole blocks, what q4_k_m writes and the
// provenance metadata are the same for both families (model/gguf_export_common.h).
#pragma once

#include <string>

#include "model/gguf_export_common.h"

namespace locr::model {

// Writes the model in `model_dir` to text_path (and mmproj_path). Everything is checked (the
// checkpoint as load_weights does, the output directories) before a byte is written; each file is
// written atomically. Fallbacks are logged (one warning per file naming its tensors) and returned.
GgufExportResult export_gguf(const std::string& model_dir, const std::string& text_path, const std::string& mmproj_path,
                             GgufOutType type);

}  // namespace locr::model
