// Options shared by the commands that run the model in-process (generate, dump, ...): model
// directory, kernel backend, threads, chat template override, images and prompt.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/args.h"
#include "model/lighton_ocr.h"
#include "runtime/generate.h"

namespace locr::app {

void add_model_options(Args& a);
void add_prompt_options(Args& a);
void add_sampling_options(Args& a);

std::unique_ptr<model::LightOnOcr> load_model(const Args& a);
// A text GGUF model file (`*.gguf`, taken as it is; anything else is a directory or ORG/NAME).
bool is_gguf_path(const std::string& spec);
// A model argument as a path: a GGUF file as given, a directory or ORG/NAME resolved
// (toolkit::resolve_model). `--model` of every in-process command and `locr serve MODEL` use it.
std::string model_path(const std::string& spec);
// Builds the prompt from --system/--prompt/--image (images first, then the text).
model::Prompt build_cli_prompt(const model::LightOnOcr& m, const Args& a);
// The request defaults every front end starts from (runtime::request_defaults of the model's
// generation_config.json), with the sampling options of add_sampling_options() applied.
runtime::RequestDefaults request_defaults_from_args(const Args& a, const model::GenerationConfig& g);
// The same with --no-loop-guard (and --loop-guard) applied: the CLI loop's options.
runtime::GenerateOptions generate_options_from_args(const Args& a, const model::GenerationConfig& g);

// --debug-forced-output TEXT|@FILE (testing, `locr serve` and `locr ocr --model`): every generation
// emits this text, tokenized with the model's tokenizer, instead of sampling (RequestInput::forced_ids).
void add_forced_output_option(Args& a);
// The forced ids, empty without the option. Throws kInvalidArgument for an empty text, a file that
// cannot be read, or a text whose ids the model's vocabulary does not hold.
std::vector<int32_t> forced_output_ids(const Args& a, const model::LightOnOcr& m);

}  // namespace locr::app
