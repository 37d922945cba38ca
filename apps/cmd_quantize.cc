// `locr quantize IN OUT.gguf --type q4_k_m|q8_0|f16|bf16|f32`: a LightOnOCR model directory (or ORG/NAME
// from the HF cache) written as the two GGUF files llama.cpp's converter writes and llama.cpp loads
// (OUT.gguf, arch qwen3, and mmproj-OUT.gguf, arch clip / lightonocr; see
// model/lightonocr/gguf_export.h), or for LightOnOCR-3-0.8B / -4B arch qwen35 and clip /
// qwen3vl_merger (model/qwen35/gguf_export.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/gguf.h"
#include "io/file.h"
#include "model/lightonocr/gguf_export.h"
#include "model/qwen35/gguf_export.h"

namespace locr::app {

int cmd_quantize(int argc, char** argv) {
  Args a("quantize",
         "Write a LightOnOCR model (a Hugging Face directory, or ORG/NAME from the HF cache) as llama.cpp's\n"
         "GGUF files, as convert_hf_to_gguf.py writes them: OUT.gguf (the text model, arch qwen3) and\n"
         "mmproj-OUT.gguf next to it (vision encoder + projector, arch clip, projector lightonocr); for\n"
         "LightOnOCR-3-0.8B / -4B (Qwen3.5) arch qwen35 and projector qwen3vl_merger.\n"
         "Both load in llama.cpp (llama-server -m OUT.gguf --mmproj mmproj-OUT.gguf) and in locr.");
  a.positional("in", "model directory or ORG/NAME");
  a.positional("out", "output text GGUF (OUT.gguf)");
  a.option("type",
           "weight type: q4_k_m (llama-quantize's Q4_K_M mix of Q4_K and Q6_K; mmproj Q8_0), q8_0 (2-D weights "
           "Q8_0, as llama.cpp's), f16, bf16 or f32 (norms stay F32); a weight whose rows are not whole blocks "
           "of its type falls back to a wider one as in llama.cpp (Q8_0 -> F16, Q4_K -> Q5_0, Q6_K -> Q8_0) "
           "and is named",
           "TYPE");
  a.option("mmproj-out", "output mmproj GGUF (default: mmproj-<OUT> in OUT's directory)", "FILE");
  a.option("threads", "worker threads (default: physical cores)", "N");
  if (!a.parse(argc, argv)) return 0;
  if (!a.has("type"))
    fail(ErrorKind::kInvalidArgument, "--type is required: q4_k_m, q8_0, f16, bf16 or f32");
  const model::GgufOutType type = model::parse_gguf_out_type(a.get("type"));
  const std::string out = a.get("out");
  if (!is_gguf_path(out))
    fail(ErrorKind::kInvalidArgument, "OUT must be a .gguf file name (locr and llama.cpp take a GGUF model by it), got '",
         out, "'");
  const std::string mmproj = a.get("mmproj-out", model::default_mmproj_path(out));
  const std::string in = model_path(a.get("in"));
  if (!io::is_directory(in))
    fail(ErrorKind::kNotFound, "model directory not found: ", in, " (locr quantize reads a Hugging Face model "
         "directory: config.json, tokenizer.json, *.safetensors)");
  ThreadPool::set_global_threads(a.get_int("threads", 0));
  const auto t0 = std::chrono::steady_clock::now();
  // The architecture from config.json: LightOnOCR-2 (qwen3 + lightonocr) or Qwen3.5 (qwen35 + qwen3vl_merger).
  const model::GgufExportResult r = is_qwen35_model(in) ? model::qwen35::export_gguf(in, out, mmproj, type)
                                                        : model::export_gguf(in, out, mmproj, type);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %d tensors, %.1f MB\n", out.c_str(), r.text_tensors, r.text_bytes / 1e6);
  if (r.mmproj_tensors > 0)
    std::printf("wrote %s: %d tensors, %.1f MB\n", mmproj.c_str(), r.mmproj_tensors, r.mmproj_bytes / 1e6);
  const int total = r.text_tensors + r.mmproj_tensors;
  if (type == model::GgufOutType::kQ4_K_M)
    std::printf("--type %s: %d of the %d tensors quantized (%d Q4_K, %d Q6_K, %d Q8_0, %d Q5_0), in %.2f s\n",
                model::gguf_out_type_name(type), r.quantized, total, r.q4_k, r.q6_k, r.q8_0, r.q5_0, s);
  else
    std::printf("--type %s: %d of the %d tensors in Q8_0, in %.2f s\n", model::gguf_out_type_name(type), r.quantized,
                total, s);
  if (!r.fallbacks.empty()) {
    // Each type change with its tensors: "Q8_0 -> F16: token_embd.weight, blk.0.attn_q.weight, ...".
    std::vector<std::pair<std::string, std::string>> groups;
    for (const model::GgufFallback& f : r.fallbacks) {
      const std::string key = std::string(io::ggml_type_info(static_cast<uint32_t>(f.chosen))->name) + " -> " +
                              io::ggml_type_info(static_cast<uint32_t>(f.written))->name;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == key; });
      if (g == groups.end()) g = groups.insert(groups.end(), {key, ""});
      g->second += (g->second.empty() ? "" : ", ") + std::string(f.mmproj ? "mmproj " : "") + f.name;
    }
    std::string list;
    for (const auto& [key, names] : groups) list += (list.empty() ? "" : "; ") + key + ": " + names;
    std::printf("%zu tensor%s fell back to a wider type (rows not whole blocks of the chosen one, as llama.cpp "
                "does): %s\n", r.fallbacks.size(), r.fallbacks.size() > 1 ? "s" : "", list.c_str());
  }
  return 0;
}

}  // namespace locr::app
