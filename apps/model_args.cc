#include "apps/model_args.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "io/file.h"
#include "io/image.h"
#include "model/kv_cache_dtype.h"
#include "io/gguf.h"
#include "model/qwen35/config.h"
#include "model/qwen35/gguf.h"
#include "model/qwen35/model.h"
#include "toolkit/hub.h"

namespace locr::app {

void add_model_options(Args& a) {
  a.option("model", "Hugging Face model directory, ORG/NAME from the HF cache (pulled when missing), or a text GGUF "
                    "(TEXT.gguf, with --mmproj)", "DIR");
  a.option("mmproj", "with a text GGUF --model: its mmproj GGUF (vision encoder + projector)", "FILE");
  a.option("threads", "worker threads (default: physical cores)", "N");
  a.option("dtype", "compute precision: bf16 (default; BF16 matmul inputs, FP32 accumulation) or f32", "TYPE");
  a.option("backend", "kernel backend, overriding --dtype: cpu-bf16, cpu-f32, ref (scalar oracle), cuda (NVIDIA GPU; "
                      "builds with -DLOCR_CUDA=ON)", "NAME");
  a.option("device", "cpu (default) or cuda (= --backend cuda)", "NAME");
  a.option("chat-template", "Jinja chat template file overriding the model's", "FILE");
  a.option("image-align", "align resized image sides to 28 (vLLM, default) or 14 (transformers) px", "N");
  a.option("quantization", "quantize the weights at load: q8_0 (GGUF Q8_0 int8 weights), q4_k (GGUF Q4_K 4-bit weights) or q4_k_m (llama.cpp's Q4_K_M mix of Q4_K and Q6_K); fp8, vLLM's spelling for 8-bit weights, is q8_0", "METHOD");
  a.option("kv-cache-dtype", "KV cache element type: auto (default: float32 on ref/cpu-f32, bfloat16 on cpu-bf16 and "
                             "CUDA), bfloat16, fp8 / fp8_e4m3 (FP8 E4M3 with a scale per token and kv "
                             "head)", "TYPE");
}

void add_prompt_options(Args& a) {
  a.option("prompt", "user text (with images: sent after them)", "TEXT");
  a.option("system", "system message", "TEXT");
  a.repeated("image", "image file (PNG, JPEG, WebP, BMP, GIF, TIFF)", "FILE");
  a.option("max-tokens", "maximum number of generated tokens", "N");
  a.option("chat-template-kwargs", "extra chat template variables as a JSON object, e.g. '{\"enable_thinking\": false}' "
                                   "(a request's chat_template_kwargs)", "JSON");
}

void add_sampling_options(Args& a) {
  a.option("temperature", "sampling temperature; 0 = greedy (default from generation_config.json)", "T");
  a.option("top-p", "nucleus sampling mass (default from generation_config.json)", "P");
  a.option("top-k", "keep the K most likely tokens; 0 = off", "K");
  a.option("seed", "random seed for reproducible sampling", "S");
  a.option("repetition-penalty", "transformers' repetition penalty over prompt and output; 1 = off (default from "
                                 "generation_config.json)", "R");
  a.option("presence-penalty", "OpenAI presence penalty in [-2, 2] (0 = off)", "P");
  a.option("frequency-penalty", "OpenAI frequency penalty in [-2, 2] (0 = off)", "F");
}

namespace {

// config.json of a model directory, or null (a GGUF file or no config, not JSON: the loaders say why).
nlohmann::json read_config(const std::string& path) {
  const std::string cfg = io::join_path(path, "config.json");
  if (!io::file_exists(cfg)) return nullptr;
  try {
    return nlohmann::json::parse(io::read_file(cfg));
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace

bool is_qwen35_model(const std::string& path) {
  if (is_gguf_path(path) && io::file_exists(path) && !std::filesystem::is_directory(path)) {
    try {
      return model::qwen35::is_qwen35_gguf(*io::GgufFile::open(path));
    } catch (const Error&) {
      return false;  // the loader says what is wrong with the file
    }
  }
  return model::qwen35::is_qwen35_config(read_config(path));
}

std::unique_ptr<model::Model> load_model_at(const std::string& path, const model::LoadOptions& lo) {
  if (is_gguf_path(path) && io::file_exists(path) && !std::filesystem::is_directory(path)) {
    // One parse of the text GGUF: its architecture picks the family, and the family's loader keeps it.
    auto text = io::GgufFile::open(path);
    if (model::qwen35::is_qwen35_gguf(*text)) return model::qwen35::Model::load_gguf(std::move(text), path, lo);
    return model::LightOnOcr::load(path, lo);
  }
  if (!is_qwen35_model(path)) return model::LightOnOcr::load(path, lo);
  if (!lo.mmproj.empty() || lo.image_align != 28)
    fail(ErrorKind::kUnsupported, "--mmproj and --image-align are not supported for Qwen3.5 models ",
         "(LightOnOCR-3-0.8B / -4B) given as a directory (--mmproj goes with a text GGUF, TEXT.gguf)");
  return model::qwen35::Model::load(path, lo);
}

std::unique_ptr<model::Model> load_any_model(const Args& a, bool profile_ops) {
  if (!a.has("model")) fail(ErrorKind::kInvalidArgument, "--model DIR is required");
  ThreadPool::set_global_threads(a.get_int("threads", 0));
  model::LoadOptions lo;
  const std::string dtype = a.get("dtype", "bf16");
  if (dtype != "bf16" && dtype != "f32") fail(ErrorKind::kInvalidArgument, "--dtype must be bf16 or f32, got '", dtype, "'");
  const std::string device = a.get("device", "cpu");
  if (device != "cpu" && device != "cuda") fail(ErrorKind::kInvalidArgument, "--device must be cpu or cuda, got '", device, "'");
  lo.backend = a.get("backend", device == "cuda" ? "cuda" : dtype == "f32" ? "cpu-f32" : "cpu-bf16");
  lo.chat_template_file = a.get("chat-template");
  lo.image_align = a.get_int("image-align", 28);
  lo.quantization = a.get("quantization");
  lo.kv_cache_dtype = a.get("kv-cache-dtype");
  model::parse_kv_cache_dtype(lo.kv_cache_dtype);  // a bad value fails before the weights load
  lo.mmproj = a.get("mmproj");
  lo.profile_ops = profile_ops;
  return load_model_at(model_path(a.get("model")), lo);
}

bool is_gguf_path(const std::string& spec) {
  return spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".gguf") == 0;
}

std::string model_path(const std::string& spec) {
  // A text GGUF file as it is (a directory whose name ends in .gguf is a directory); ORG/NAME
  // resolves to the Hugging Face cache snapshot, pulled when missing (HF_HUB_OFFLINE=1: the cache
  // only); anything else is a directory, used as given.
  if (is_gguf_path(spec) && !std::filesystem::is_directory(spec)) return spec;
  return toolkit::resolve_model(spec);
}

model::Prompt build_cli_prompt(const runtime::RequestPath& path, const Args& a) {
  std::vector<io::Image> images;
  for (const auto& path : a.get_all("image")) images.push_back(io::load_image(path));
  const auto prompt = a.maybe("prompt");
  const auto system = a.maybe("system");
  if (!prompt && images.empty()) fail(ErrorKind::kInvalidArgument, "give --prompt TEXT and/or --image FILE");
  const auto messages = model::Model::make_messages(system ? &*system : nullptr, prompt ? &*prompt : nullptr,
                                                    static_cast<int>(images.size()));
  nlohmann::json kwargs = nullptr;
  if (a.has("chat-template-kwargs")) {
    try {
      kwargs = nlohmann::json::parse(a.get("chat-template-kwargs"));
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorKind::kInvalidArgument, "--chat-template-kwargs is not valid JSON: ", e.what());
    }
    if (!kwargs.is_object())
      fail(ErrorKind::kInvalidArgument, "--chat-template-kwargs must be a JSON object, got ", kwargs.dump());
  }
  return path.prompt(path.model().render_chat(messages, kwargs), images);
}

runtime::RequestDefaults request_defaults_from_args(const Args& a, const model::GenerationConfig& g) {
  runtime::RequestDefaults d = runtime::request_defaults(g);
  runtime::SamplingParams& s = d.sampling;
  s.temperature = static_cast<float>(a.get_double("temperature", s.temperature));
  s.top_p = static_cast<float>(a.get_double("top-p", s.top_p));
  s.top_k = a.get_int("top-k", s.top_k);
  if (a.has("seed")) {
    s.seed = static_cast<uint64_t>(std::stoull(a.get("seed")));
    s.has_seed = true;
  }
  if (s.temperature < 0) fail(ErrorKind::kInvalidArgument, "--temperature must be >= 0");
  if (s.top_p <= 0 || s.top_p > 1) fail(ErrorKind::kInvalidArgument, "--top-p must be in (0, 1]");
  // The server's ranges (server/openai_schema.cc).
  runtime::Penalties& p = d.penalties;
  p.repetition = static_cast<float>(a.get_double("repetition-penalty", p.repetition));
  p.presence = static_cast<float>(a.get_double("presence-penalty", p.presence));
  p.frequency = static_cast<float>(a.get_double("frequency-penalty", p.frequency));
  if (!(p.repetition > 0) || p.repetition > 1e6) fail(ErrorKind::kInvalidArgument, "--repetition-penalty must be > 0");
  if (!(p.presence >= -2 && p.presence <= 2)) fail(ErrorKind::kInvalidArgument, "--presence-penalty must be in [-2, 2]");
  if (!(p.frequency >= -2 && p.frequency <= 2))
    fail(ErrorKind::kInvalidArgument, "--frequency-penalty must be in [-2, 2]");
  d.loop_guard.enabled = a.get_flag("loop-guard", d.loop_guard.enabled);
  return d;
}

runtime::RequestPath cli_request_path(const Args& a, const model::Model& m, int64_t max_model_len,
                                      int fallback_max_tokens) {
  runtime::RequestPathOptions o;
  o.max_model_len = max_model_len;
  o.fallback_max_tokens = fallback_max_tokens;
  o.forced_ids = forced_output_ids(a, m);
  return runtime::RequestPath(m, request_defaults_from_args(a, m.generation_config()), std::move(o));
}

CliRun run_cli_request(const Args& a, const model::Model& m,
                       const std::function<void(const std::string&)>& print) {
  // Up to 1024 tokens unless --max-tokens or generation_config.json says otherwise.
  const runtime::RequestPath path = cli_request_path(a, m, 0, 1024);
  const model::Prompt prompt = build_cli_prompt(path, a);
  CliRun run;
  run.prompt_tokens = static_cast<int64_t>(prompt.ids.size());
  run.images = prompt.images.size();
  const runtime::DecodeParams d = path.decode(run.prompt_tokens, a.get_int("max-tokens", 0));
  runtime::TextOptions t;
  t.stop = a.get_all("stop");
  runtime::TextOutput text = path.output(d, std::move(t));
  runtime::GenerateHooks hooks;
  hooks.on_token = [&](int32_t id) {
    print(text.push(id));
    return !text.stopped();
  };
  run.result = runtime::generate(m, prompt, d, hooks);
  print(text.push(-1, /*last=*/true));  // nothing after a stop string
  return run;
}

void add_forced_output_option(Args& a) {
  a.option("debug-forced-output",
           "TESTING ONLY: every generation emits this text (or @FILE's), tokenized with the model's tokenizer, "
           "then EOS, instead of sampling; the model still runs each step (timings, logprobs of the forced "
           "tokens are real)",
           "TEXT|@FILE");
}

std::vector<int32_t> forced_output_ids(const Args& a, const model::Model& m) {
  if (!a.has("debug-forced-output")) return {};
  std::string text = a.get("debug-forced-output");
  if (!text.empty() && text[0] == '@') {
    try {
      text = io::read_file(text.substr(1));
    } catch (const std::exception& e) {
      fail(ErrorKind::kInvalidArgument, "--debug-forced-output ", text, ": ", e.what());
    }
  }
  if (text.empty()) fail(ErrorKind::kInvalidArgument, "--debug-forced-output: the text is empty");
  std::vector<int32_t> ids = m.tokenizer().encode(text);
  const int64_t vocab = m.vocab_size();
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      fail(ErrorKind::kInvalidArgument, "--debug-forced-output: token id ", id, " is outside the model's vocabulary (",
           vocab, ")");
  LOCR_WARN("debug: --debug-forced-output: every generation emits a fixed text of ", ids.size(),
            " tokens (testing only)");
  return ids;
}

}  // namespace locr::app
