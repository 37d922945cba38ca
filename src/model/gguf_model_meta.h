// What both families read from a GGUF model besides its config and tensors
// (model/lightonocr/gguf_checkpoint.h for LightOnOCR's `qwen3` + `mmproj`, model/qwen35/gguf.h for
// Qwen3.5's `qwen35` + `mmproj`): token ids by text, the tokenizer and chat template of the text
// GGUF (or the files next to it), the generation defaults, and the directory the files are in.
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/generation_config.h"
#include "tokenizer/tokenizer.h"

namespace locr::model {

// The documented LightOnOCR-2 defaults with the ids of the GGUF's tokenizer metadata.
GenerationConfig gguf_generation_config(const io::GgufFile& text);
// Id of `token` in tokenizer.ggml.tokens, or -1.
int gguf_token_id(const io::GgufFile& text, const std::string& token);
// The chat template embedded in the text GGUF (tokenizer.chat_template); empty when none.
std::string gguf_chat_template(const io::GgufFile& text);
// The directory a GGUF file is in ("." for a bare name).
std::string gguf_dir_of(const std::string& path);
// The tokenizer of a GGUF model: from its tokenizer.ggml.* metadata (tokenizer/from_gguf.h), as
// llama-server builds it. A tokenizer.json next to the text GGUF at `path` wins when present (a HF
// tokenizer that travels with the file; it differs only in which <|...|> tokens decoding skips).
std::unique_ptr<tokenizer::Tokenizer> gguf_tokenizer(const io::GgufFile& text, const std::string& path,
                                          const tokenizer::TokenizerOptions& options);
// The chat template: `chat_template_file` (--chat-template) when given, else the GGUF's
// tokenizer.chat_template, else a chat_template.jinja next to the file; else an error naming all three.
std::string gguf_template_source(const io::GgufFile& text, const std::string& path,
                                 const std::string& chat_template_file);

}  // namespace locr::model
