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
// Builds the prompt from --system/--prompt/--image (images first, then the text).
model::Prompt build_cli_prompt(const model::LightOnOcr& m, const Args& a);
runtime::SamplingParams sampling_from_args(const Args& a, const model::GenerationConfig& g);

}  // namespace locr::app
