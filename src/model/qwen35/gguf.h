// The Qwen3.5 family (LightOnOCR-3-0.8B / -4B) from llama.cpp's GGUF files, as its converter
// (convert_hf_to_gguf.py, `Qwen3_5TextModel` + `Qwen3VLVisionModel`) writes them and llama-server
// takes them: a text model of arch `qwen35` and an `mmproj` of arch `clip` with projector type
// `qwen3vl_merger`.
//
// What is read from where:
//   text GGUF    qwen35.* -> TextConfig (head_dim = key_length, partial rotary = rope.dimension_count
//                / key_length, mrope_section = rope.dimension_sections[0..2], layer types =
//                attention.recurrent_layers, DeltaNet widths from ssm.{state_size, group_count,
//                time_step_rank, inner_size, conv_kernel}); vocabulary size = token_embd's rows; tied
//                when there is no output.weight; image / vision tokens by their text in
//                tokenizer.ggml.tokens
//   mmproj GGUF  clip.vision.* -> VisionConfig (projection_dim = out_hidden_size, the position table's
//                rows = num_position_embeddings, temporal patch 2 = the two patch_embd halves) and
//                patch / merge / mean / std of the preprocessing
// Not in GGUF: the image processor's pixel bounds (a preprocessor_config.json next to the text GGUF
// gives them, as transformers reads it; else LightOnOCR-3's: 65,536 .. 16,777,216 pixels), the
// vision LayerNorm eps (1e-6, fixed in transformers' code) and rotary theta (1e4).
//
// Undone at load, each exactly (docs/architecture.md lists what the converter stores):
//   - norms: stored as 1 + w (the DeltaNet ssm_norm as w), which is what locr multiplies by;
//   - ssm_a = -exp(A_log) in F32: locr's kernel takes A_log, read back as log(-ssm_a) (the decay
//     then differs from the checkpoint's by the converter's F32 rounding of exp, ~1e-7 relative);
//   - attn_q holds query and gate rows interleaved per head, as the checkpoint: regrouped as there;
//   - value heads outnumbering key heads (the 4B): the converter reorders every value-head axis from
//     grouped-by-key-head (HF) to tiled order; locr keeps the file's order (no copy, quantized
//     blocks as stored) and its kernel reads it so (TextWeights::tiled_v_heads -> DeltaNetParams::tiled);
//   - the Conv3d patch embedding split into its two temporal halves is put back together.
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/qwen35/config.h"
#include "model/qwen35/processor.h"
#include "model/qwen35/weights.h"

namespace locr::model::qwen35 {

struct GgufFiles {
  std::shared_ptr<io::GgufFile> text;    // general.architecture "qwen35"
  std::shared_ptr<io::GgufFile> mmproj;  // "clip", projector "qwen3vl_merger"
};

// True when the GGUF's general.architecture is "qwen35".
bool is_qwen35_gguf(const io::GgufFile& f);

// Checks what the files are; the mmproj is required (locr's Qwen3.5 models read images).
GgufFiles open_gguf(std::shared_ptr<io::GgufFile> text, const std::string& mmproj_path);

// The config as config.json would give it (validated by Config::from_json).
Config gguf_config(const GgufFiles& f);
// Patch, merge, mean and std from the mmproj; pixel bounds from `dir`/preprocessor_config.json
// when present (it is read whole, and must agree with the mmproj), else the defaults above.
ProcessorConfig gguf_processor_config(const GgufFiles& f, const std::string& dir);

// Binds and shape-checks every tensor of both files (errors name the tensor; a tensor nothing reads
// is an error). F32, F16, BF16 stay as stored; Q8_0 / Q4_K / Q6_K stay quantized when their rows
// are whole blocks (`keep_quantized`); other types are dequantized to `dequantize_to`.
Weights load_gguf_weights(const GgufFiles& f, const Config& cfg, DType dequantize_to, bool keep_quantized);

// After prepare_weights: the copies load_gguf_weights made (regrouped q / gate rows, dequantized
// tensors, the rejoined patch embedding) that the backend no longer reads (a packed weight,
// or a part of a fused stack) are freed, so that resident memory holds one copy of each weight.
// Weights the files map are left alone (prepare_weights handed their pages back).
void drop_packed_copies(Weights& w, const GgufFiles& f);

}  // namespace locr::model::qwen35
