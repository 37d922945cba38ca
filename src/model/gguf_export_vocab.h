// The tokenizer and sampling metadata of `locr quantize` (model/gguf_export_common.h), as llama.cpp's
// converter writes them (TextModel._set_vocab_gpt2, gguf-py SpecialVocab and Metadata):
//
//   tokenizer.ggml.model / pre    "gpt2" / "qwen2" or "qwen35" (a byte-level BPE tokenizer.json is required)
//   tokenizer.ggml.tokens         one per id up to the config's vocab_size; ids no token has are
//                                 "[PAD<id>]" of type UNUSED (5)
//   tokenizer.ggml.token_type     i32: NORMAL 1; an added token is CONTROL 3 when special or when it
//                                 looks special (<|...|>, <｜...｜>, <unused...>, <pad>, <mask>, <2mass>,
//                                 [@BOS@]), else USER_DEFINED 4 (U+2581 written as a space)
//   tokenizer.ggml.merges         "left right"; pair-form merges with spaces encoded as U+0120
//   tokenizer.ggml.<x>_token_id   u32, from tokenizer_config.json's <x>_token (looked up among the
//                                 added tokens), then config.json's <x>_token_id, in the order
//                                 bos, eos, unk, sep, pad, cls, mask
//   tokenizer.ggml.add_bos_token / add_eos_token   tokenizer_config.json's add_*_token, else false
//   tokenizer.chat_template       tokenizer_config.json's chat_template, else chat_template.jinja,
//                                 else chat_template.json's
//   general.sampling.*            generation_config.json's top_k, top_p, min_p, temperature, ...
#pragma once

#include <string>

#include "io/gguf_writer.h"

namespace locr::model {

void add_gguf_sampling(io::GgufWriter& w, const std::string& model_dir);
// `pre`: tokenizer.ggml.pre, the pre-tokenizer's name ("qwen2" for LightOnOCR-2, "qwen35" for Qwen3.5).
void add_gguf_vocab(io::GgufWriter& w, const std::string& model_dir, int vocab_size, const std::string& pre = "qwen2");

}  // namespace locr::model
