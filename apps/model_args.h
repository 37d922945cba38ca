// Options shared by the commands that run the model in-process (generate, chat, dump, ocr --model):
// model directory, kernel backend, threads, chat template override, images and prompt, sampling;
// their request path (runtime/request_path.h, the one `locr serve` builds requests with).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/args.h"
#include "model/lightonocr/lighton_ocr.h"  // model::LoadOptions
#include "runtime/generate.h"
#include "runtime/request_path.h"

namespace locr::app {

void add_model_options(Args& a);
void add_prompt_options(Args& a);
void add_sampling_options(Args& a);

// The model of --model (a directory, ORG/NAME, or a text GGUF with --mmproj), either architecture,
// picked from config.json (model_type "qwen3_5": model/qwen35/model.h), with --dtype / --device /
// --backend, --chat-template, --image-align, --quantization, --kv-cache-dtype and --threads applied;
// profile_ops: time every op (kernels::ProfiledOps, `locr perf --profile-ops`).
std::unique_ptr<model::Model> load_any_model(const Args& a, bool profile_ops = false);
// True when `path` (a model directory) holds a Qwen3.5 model (config.json model_type "qwen3_5").
bool is_qwen35_model(const std::string& path);
// The model at `path` (a directory, or a text GGUF file), either architecture, with `lo`; for a
// Qwen3.5 model the options that family does not have yet (kv_cache_dtype, mmproj, an image_align
// other than 28) are refused naming it.
std::unique_ptr<model::Model> load_model_at(const std::string& path, const model::LoadOptions& lo);
// A text GGUF model file (`*.gguf`, taken as it is; anything else is a directory or ORG/NAME).
bool is_gguf_path(const std::string& spec);
// A model argument as a path: a GGUF file as given, a directory or ORG/NAME resolved
// (toolkit::resolve_model). `--model` of every in-process command and `locr serve MODEL` use it.
std::string model_path(const std::string& spec);
// Builds the prompt from --system/--prompt/--image (images first, then the text), rendered with
// --chat-template-kwargs where the command declares it (add_prompt_options does).
model::Prompt build_cli_prompt(const runtime::RequestPath& path, const Args& a);
// The request defaults every front end starts from (runtime::request_defaults of the model's
// generation_config.json), with the sampling options of add_sampling_options() applied (in the
// ranges the server takes) and --loop-guard / --no-loop-guard where the command has it.
runtime::RequestDefaults request_defaults_from_args(const Args& a, const model::GenerationConfig& g);
// The request path of an in-process command: request_defaults_from_args, a context of
// `max_model_len` tokens (0: the model's), `fallback_max_tokens` when neither --max-tokens nor
// generation_config.json sets one (0: the rest of the context), --debug-forced-output where declared.
runtime::RequestPath cli_request_path(const Args& a, const model::Model& m, int64_t max_model_len,
                                      int fallback_max_tokens);

// `locr generate` and `locr chat --mode local`: the prompt of --system/--prompt/--image generated
// in-process (runtime::generate) as `locr serve` would generate it (defaults, --max-tokens, the
// sampling options), its text handed to `print` as it is released; --stop TEXT where declared ends
// it at a stop string, as a request's `stop`.
struct CliRun {
  int64_t prompt_tokens = 0;
  size_t images = 0;
  runtime::GenerateResult result;
};
CliRun run_cli_request(const Args& a, const model::Model& m, const std::function<void(const std::string&)>& print);

// --debug-forced-output TEXT|@FILE (testing, `locr serve` and `locr ocr --model`): every generation
// emits this text, tokenized with the model's tokenizer, instead of sampling (RequestInput::forced_ids).
void add_forced_output_option(Args& a);
// The forced ids, empty without the option. Throws kInvalidArgument for an empty text, a file that
// cannot be read, or a text whose ids the model's vocabulary does not hold.
std::vector<int32_t> forced_output_ids(const Args& a, const model::Model& m);

}  // namespace locr::app
