// `locr eval`: numerical accuracy of a kernel backend against the FP32 reference backend on the
// same model (the seeds' scripts/eval_accuracy.py). A fixed built-in set of inputs — text prompts
// and synthetic page images made in-process — runs through both backends; the last-position logits,
// every hidden state of the decoder (all positions) and the image embeddings are compared:
// max_abs_error, mean_abs_error, relative_error, cosine_similarity per tensor, per input and overall.
// Pass: max_abs_error < --max-abs-error and cosine_similarity > --min-cosine for every tensor
// (relative error is reported, not judged). Writes JSON, prints a table, exits 1 on failure.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "model/kv_cache_dtype.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "io/image.h"
#include "toolkit/compare.h"
#include "toolkit/hub.h"
#include "toolkit/synth_image.h"

namespace locr::app {

namespace {

using ojson = nlohmann::ordered_json;

struct EvalInput {
  std::string name, kind, system, prompt, image_desc;
  std::vector<io::Image> images;
};

struct Captured {
  int64_t tokens = 0;
  std::vector<std::pair<std::string, std::vector<float>>> tensors;  // logits, hidden.i, image_embeds
};

std::vector<EvalInput> builtin_inputs() {
  std::vector<EvalInput> in;
  in.push_back({"text_future", "text", "", "The future of AI is", "", {}});
  in.push_back({"text_hello", "text", "", "Hello, how are you?", "", {}});
  in.push_back({"text_system_zh", "text", "You are a concise assistant.", "用一句中文说明 TCP 和 UDP 的核心区别。", "", {}});
  EvalInput p{"page_portrait", "image", "", "", "synthetic page 280x392", {}};
  p.images.push_back(toolkit::synth_page(280, 392, 1));
  in.push_back(std::move(p));
  EvalInput l{"page_landscape_text", "image+text", "", "Convert this page to markdown.", "synthetic page 448x308", {}};
  l.images.push_back(toolkit::synth_page(448, 308, 2));
  in.push_back(std::move(l));
  return in;
}

std::vector<Captured> run_backend(const std::string& dir, const std::string& backend, const Args& a,
                                  const std::vector<EvalInput>& inputs, const std::string& quantization = "",
                                  const std::string& kv_cache_dtype = "") {
  model::LoadOptions lo;
  lo.backend = backend;
  lo.quantization = quantization;
  lo.kv_cache_dtype = kv_cache_dtype;
  lo.chat_template_file = a.get("chat-template");
  lo.image_align = a.get_int("image-align", 28);
  lo.mmproj = a.get("mmproj");
  LOCR_INFO("eval: loading ", dir, " on backend ", backend);
  auto m = load_model_at(dir, lo);  // either architecture (config.json)
  std::vector<Captured> out;
  for (const auto& in : inputs) {
    const auto messages = model::Model::make_messages(in.system.empty() ? nullptr : &in.system,
                                                           in.prompt.empty() ? nullptr : &in.prompt,
                                                           static_cast<int>(in.images.size()));
    // {"enable_thinking": false} as LightOn sends it (Qwen3.5's 4B template thinks otherwise;
    // LightOnOCR-2's templates do not read it).
    const model::Prompt prompt = m->build_prompt(m->render_chat(messages, {{"enable_thinking", false}}), in.images);
    Captured c;
    c.tokens = static_cast<int64_t>(prompt.ids.size());
    const int64_t H = m->hidden_size();
    runtime::DecodeParams go;
    go.max_tokens = 1;
    go.sampling.temperature = 0;
    runtime::GenerateHooks hooks;
    std::vector<float> logits, embeds;
    std::vector<std::pair<std::string, std::vector<float>>> hidden;
    hooks.on_images = [&](const model::ImageEncoding& e) {
      embeds.assign(e.embeds.data<float>(), e.embeds.data<float>() + e.embeds.numel());
    };
    hooks.on_hidden = [&](int i, const float* h, int64_t rows) {
      hidden.push_back({"hidden." + std::to_string(i), std::vector<float>(h, h + rows * H)});
    };
    hooks.on_prompt_logits = [&](const float* l, int64_t v) { logits.assign(l, l + v); };
    runtime::generate(*m, prompt, go, hooks);
    c.tensors.push_back({"logits", std::move(logits)});
    if (!embeds.empty()) c.tensors.push_back({"image_embeds", std::move(embeds)});
    for (auto& h : hidden) c.tensors.push_back(std::move(h));
    out.push_back(std::move(c));
  }
  return out;
}

// Deterministic N(0, scale^2) noise (hidden flag --perturb-candidate, for tests).
void perturb(std::vector<float>& v, double scale, uint64_t key) {
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u1 = ((z >> 11) + 0.5) / 9007199254740992.0, u2 = ((z & 0x7FF) + 0.5) / 2048.0;
    v[i] += static_cast<float>(scale * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
}

const char* verdict(bool ok) { return ok ? "PASS" : "FAIL"; }

}  // namespace

int cmd_eval(int argc, char** argv) {
  Args a("eval",
         "Compare a kernel backend's logits, hidden states and image embeddings with the FP32 reference\n"
         "backend on built-in text prompts and synthetic page images (plus any --prompt/--image).\n"
         "Exit status 1 when a tensor fails the thresholds.");
  a.option("model", "model directory, ORG/NAME from the Hugging Face cache (pulled when missing), or a text GGUF",
           "DIR");
  a.option("mmproj", "with a text GGUF --model: its mmproj GGUF", "FILE");
  a.option("output", "JSON report (default accuracy_result.json)", "FILE");
  a.option("candidate", "backend under test: cpu-bf16 (default), cpu-f32, cpu, ref, cuda (GPU executor)", "NAME");
  a.option("reference", "reference backend (default cpu-f32)", "NAME");
  a.option("quantization", "quantize the candidate's weights at load: q8_0, q4_k or q4_k_m (the reference stays as stored)", "METHOD");
  a.option("kv-cache-dtype", std::string("the candidate's KV cache element type: ") + model::kv_cache_dtype_choices() +
                                 " (the reference keeps its own)", "TYPE");
  a.repeated("image", "extra input: an image file (OCR request, image only)", "FILE");
  a.repeated("prompt", "extra input: a text prompt", "TEXT");
  a.flag("no-builtin", "run only the --image/--prompt inputs");
  a.option("max-abs-error", "pass threshold: max |candidate - reference| < this (default 1.0)", "X");
  a.option("min-cosine", "pass threshold: cosine similarity > this (default 0.999)", "X");
  a.option("threads", "worker threads (default: physical cores)", "N");
  a.option("chat-template", "Jinja chat template file overriding the model's", "FILE");
  a.option("image-align", "align resized image sides to 28 (default) or 14 px", "N");
  a.option("perturb-candidate", "(testing) add N(0, SCALE^2) noise to every candidate tensor", "SCALE");
  if (!a.parse(argc, argv)) return 0;
  if (!a.has("model")) fail(ErrorKind::kInvalidArgument, "--model DIR is required");
  const std::string dir = model_path(a.get("model"));
  const std::string cand = a.get("candidate", "cpu-bf16"), ref = a.get("reference", "cpu-f32");
  model::parse_kv_cache_dtype(a.get("kv-cache-dtype"));  // a bad value fails before any model loads
  toolkit::Thresholds th;
  th.max_abs_error = a.get_double("max-abs-error", 1.0);
  th.min_cosine = a.get_double("min-cosine", 0.999);
  const double noise = a.get_double("perturb-candidate", 0.0);
  ThreadPool::set_global_threads(a.get_int("threads", 0));

  std::vector<EvalInput> inputs;
  if (!a.get_flag("no-builtin")) inputs = builtin_inputs();
  int k = 0;
  for (const auto& p : a.get_all("prompt")) inputs.push_back({"prompt_" + std::to_string(k++), "text", "", p, "", {}});
  k = 0;
  for (const auto& f : a.get_all("image")) {
    EvalInput in{"image_" + std::to_string(k++), "image", "", "", f, {}};
    in.images.push_back(io::load_image(f));
    inputs.push_back(std::move(in));
  }
  if (inputs.empty()) fail(ErrorKind::kInvalidArgument, "no inputs: drop --no-builtin or give --prompt/--image");

  const auto ref_out = run_backend(dir, ref, a, inputs);
  auto cand_out = run_backend(dir, cand, a, inputs, a.get("quantization"), a.get("kv-cache-dtype"));

  ojson report;
  report["model"] = dir;
  report["candidate"] = cand;
  if (a.has("quantization")) report["candidate_quantization"] = a.get("quantization");
  if (a.has("kv-cache-dtype")) report["candidate_kv_cache_dtype"] = a.get("kv-cache-dtype");
  report["reference"] = ref;
  report["thresholds"] = {{"max_abs_error", th.max_abs_error}, {"cosine_similarity", th.min_cosine},
                          {"rule", "max_abs_error < threshold and cosine_similarity > threshold; relative_error not judged"}};
  if (noise > 0) report["perturb_candidate"] = noise;
  toolkit::StatsSummary all;
  ojson jin = ojson::array();
  std::printf("%-20s %6s  %-14s %11s %11s %11s %12s  %s\n", "input", "tokens", "tensor", "max_abs", "mean_abs", "rel_err",
              "cosine", "result");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    auto& c = cand_out[i];
    const auto& r = ref_out[i];
    if (c.tokens != r.tokens || c.tensors.size() != r.tensors.size())
      fail(ErrorKind::kInternal, "backends disagree on the prompt of ", in.name);
    toolkit::StatsSummary sum, hidden;
    ojson tensors;
    bool top1 = true;
    for (size_t t = 0; t < c.tensors.size(); ++t) {
      auto& [name, cv] = c.tensors[t];
      const auto& rv = r.tensors[t].second;
      if (noise > 0) perturb(cv, noise, i * 1000 + t);
      const auto s = toolkit::compare_tensors(cv.data(), rv.data(), static_cast<int64_t>(cv.size()));
      const bool ok = toolkit::passes(s, th);
      sum.add(s, ok);
      all.add(s, ok);
      ojson js = toolkit::to_json(s);
      if (name == "logits") {
        const auto am = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
        top1 = am(cv) == am(rv);
        js["top1_match"] = top1;
      }
      js["pass"] = ok;
      tensors[name] = js;
      if (name.rfind("hidden.", 0) == 0) {
        hidden.add(s, ok);
      } else {
        std::printf("%-20s %6lld  %-14s %11.4e %11.4e %11.4e %12.8f  %s\n", in.name.c_str(), static_cast<long long>(c.tokens),
                    name.c_str(), s.max_abs_error, s.mean_abs_error, s.relative_error, s.cosine_similarity, verdict(ok));
      }
    }
    const auto hj = hidden.to_json();
    std::printf("%-20s %6lld  %-14s %11.4e %11.4e %11.4e %12.8f  %s\n", in.name.c_str(), static_cast<long long>(c.tokens),
                ("hidden x" + std::to_string(hidden.tensors)).c_str(), hidden.max_abs_error, hj["mean_abs_error"].get<double>(),
                hj["relative_error"].get<double>(), hidden.min_cosine, verdict(hidden.failed == 0));
    ojson ji;
    ji["name"] = in.name;
    ji["kind"] = in.kind;
    if (!in.system.empty()) ji["system"] = in.system;
    if (!in.prompt.empty()) ji["prompt"] = in.prompt;
    if (!in.image_desc.empty()) ji["image"] = in.image_desc;
    ji["num_tokens"] = c.tokens;
    ji["top1_match"] = top1;
    ji["summary"] = sum.to_json();
    ji["tensors"] = tensors;
    ji["pass"] = sum.failed == 0;
    jin.push_back(ji);
  }
  report["inputs"] = jin;
  report["summary"] = all.to_json();
  report["pass"] = all.failed == 0;
  const auto sj = all.to_json();
  std::printf("overall: %lld tensors, %lld failed; max_abs_error %.4e, mean_abs_error %.4e, relative_error %.4e, "
              "min cosine %.8f -> %s\n",
              static_cast<long long>(all.tensors), static_cast<long long>(all.failed), all.max_abs_error,
              sj["mean_abs_error"].get<double>(), sj["relative_error"].get<double>(), all.min_cosine, verdict(all.failed == 0));
  const std::string out = a.get("output", "accuracy_result.json");
  std::ofstream f(out);
  f << report.dump(2) << "\n";
  if (!f) fail(ErrorKind::kIo, "cannot write ", out);
  std::printf("wrote %s\n", out.c_str());
  return all.failed == 0 ? 0 : 1;
}

}  // namespace locr::app
