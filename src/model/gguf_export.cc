// `locr quantize`: a model directory to llama.cpp's two GGUF files; see gguf_export.h.
#include "model/gguf_export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "io/file.h"
#include "io/gguf_writer.h"
#include "io/safetensors.h"
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"
#include "model/config.h"
#include "model/gguf_checkpoint.h"
#include "model/gguf_export_parts.h"
#include "model/gguf_export_vocab.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/weights.h"

namespace locr::model {

namespace export_detail {

using nlohmann::json;
using io::GgmlType;

json read_json(const std::string& path) {
  try {
    return json::parse(io::read_file(path));
  } catch (const json::exception& e) {
    fail(ErrorKind::kInvalidArgument, "invalid JSON in ", path, ": ", e.what());
  }
}

GgmlType weight_type(GgufOutType t) {
  switch (t) {
    case GgufOutType::kF32: return GgmlType::kF32;
    case GgufOutType::kF16: return GgmlType::kF16;
    case GgufOutType::kBF16: return GgmlType::kBF16;
    case GgufOutType::kQ8_0: return GgmlType::kQ8_0;
    case GgufOutType::kQ4_K_M: return GgmlType::kQ4_K;  // the mix's default (q4_k_m_type)
  }
  return GgmlType::kF32;
}

uint32_t file_type(GgufOutType t) {  // llama.cpp's LlamaFileType
  switch (t) {
    case GgufOutType::kF32: return 0;
    case GgufOutType::kF16: return 1;
    case GgufOutType::kBF16: return 32;
    case GgufOutType::kQ8_0: return 7;
    case GgufOutType::kQ4_K_M: return 15;
  }
  return 0;
}

// The bytes of one tensor in its GGUF type, row by row from the checkpoint's dtype.
std::string tensor_bytes(const Item& it) {
  const Matrix& m = *it.m;
  if (m.data == nullptr || (m.dtype != DType::kF32 && m.dtype != DType::kBF16 && m.dtype != DType::kF16))
    fail(ErrorKind::kInternal, "quantize: weight for '", it.name, "' is not a plain F32/BF16/F16 matrix");
  const int64_t rows = m.rows, cols = m.cols;
  const int64_t src_row = dtype_row_bytes(m.dtype, cols);
  const GgmlType t = it.type;
  const int64_t dst_row = t == GgmlType::kQ8_0   ? cols / 32 * 34
                          : t == GgmlType::kQ5_0 ? cols / 32 * 22
                          : t == GgmlType::kQ4_K ? cols / 256 * 144
                          : t == GgmlType::kQ6_K ? cols / 256 * 210
                                                 : cols * (t == GgmlType::kF32 ? 4 : 2);
  std::string out(static_cast<size_t>(rows * dst_row), '\0');
  const DType same = t == GgmlType::kF32 ? DType::kF32 : t == GgmlType::kF16 ? DType::kF16
                     : t == GgmlType::kBF16 ? DType::kBF16 : DType::kQ8_0;  // (never a checkpoint's dtype)
  ThreadPool::global().parallel_for(rows, 16, [&](int64_t b, int64_t e, int) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = b; r < e; ++r) {
      const int64_t from = it.row_from.empty() ? r : it.row_from[r];
      const char* src = static_cast<const char*>(m.data) + from * src_row;
      char* dst = out.data() + r * dst_row;
      if (m.dtype == same) {  // the checkpoint's own bytes
        std::memcpy(dst, src, static_cast<size_t>(src_row));
        continue;
      }
      convert_to_f32(m.dtype, src, row.data(), static_cast<size_t>(cols));
      switch (t) {
        case GgmlType::kF32: std::memcpy(dst, row.data(), static_cast<size_t>(cols) * 4); break;
        case GgmlType::kF16:
          for (int64_t c = 0; c < cols; ++c) {
            const uint16_t h = f32_to_f16(row[c]);
            std::memcpy(dst + 2 * c, &h, 2);
          }
          break;
        case GgmlType::kBF16:
          for (int64_t c = 0; c < cols; ++c) {
            const uint16_t h = f32_to_bf16(row[c]);
            std::memcpy(dst + 2 * c, &h, 2);
          }
          break;
        case GgmlType::kQ4_K: kernels::quantize_row_q4_K(row.data(), dst, cols); break;
        case GgmlType::kQ6_K: kernels::quantize_row_q6_K(row.data(), dst, cols); break;
        case GgmlType::kQ5_0: quantize_row_q5_0(row.data(), dst, cols); break;
        case GgmlType::kQ8_0: kernels::quantize_row_q8_0(row.data(), dst, cols); break;
        default: fail(ErrorKind::kInternal, "quantize: no writer for the type of '", it.name, "'");
      }
    }
  });
  return out;
}

// gguf-py's model_weight_count_rounded_notation(n, min_digits=2) (general.size_label).
std::string size_label(int64_t n) {
  const double x = static_cast<double>(n);
  double scaled;
  const char* suffix;
  if (x > 1e12) scaled = x * 1e-12, suffix = "T";
  else if (x > 1e9) scaled = x * 1e-9, suffix = "B";
  else if (x > 1e6) scaled = x * 1e-6, suffix = "M";
  else scaled = x * 1e-3, suffix = "K";
  const double rounded = std::nearbyint(scaled);  // Python's round(): half to even (the default FP mode)
  const std::string digits = rounded == 0 ? std::string() : std::to_string(static_cast<int64_t>(rounded));
  const int fix = std::max(2 - static_cast<int>(digits.size()), 0);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f%s", fix, scaled, suffix);
  return buf;
}

// Metadata.id_to_title over the converter's name heuristic for a model directory.
std::string model_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string id = p.filename().string();
  // In the Hugging Face cache: models--ORG--NAME/snapshots/<rev>.
  if (p.parent_path().filename() == "snapshots") {
    const std::string repo = p.parent_path().parent_path().filename().string();
    const size_t at = repo.rfind("--");
    if (repo.rfind("models--", 0) == 0 && at != std::string::npos && at >= 8) id = repo.substr(at + 2);
  }
  if (id.find(' ') != std::string::npos) return id;
  std::vector<std::string> words;
  std::string cur;
  for (char c : id) {
    if (c == '-' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) words.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) words.push_back(cur);
  std::string out;
  for (std::string w : words) {
    bool has_cased = false, lower = true;
    for (char c : w) {
      if (std::isupper(static_cast<unsigned char>(c))) lower = false;
      if (std::isalpha(static_cast<unsigned char>(c))) has_cased = true;
    }
    const bool version = (w.size() > 1 && w[0] == 'v' && std::isdigit(static_cast<unsigned char>(w[1]))) ||
                         std::isdigit(static_cast<unsigned char>(w[0]));
    if (has_cased && lower && !version) {  // str.title(): upper after a non-letter, lower otherwise
      bool prev_alpha = false;
      for (char& c : w) {
        const bool a = std::isalpha(static_cast<unsigned char>(c)) != 0;
        if (a) c = static_cast<char>(prev_alpha ? std::tolower(c) : std::toupper(c));
        prev_alpha = a;
      }
    }
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

// ne (ggml order) of a [rows, cols] matrix, or of a vector when rows is 1.
std::vector<int64_t> ne_of(const Matrix& m, bool vector) {
  if (vector) return {m.cols};
  return {m.cols, m.rows};
}

void check_dir(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!io::is_directory(dir.string()))
    fail(ErrorKind::kNotFound, "output directory ", dir.string(), " does not exist (for ", path, ")");
}

int64_t elements(const std::vector<Item>& items) {
  int64_t n = 0;
  for (const Item& it : items) {
    int64_t e = 1;
    for (int64_t d : it.ne) e *= d;
    n += e;
  }
  return n;
}

void add_tensors(io::GgufWriter& w, const std::vector<Item>& items) {
  for (const Item& it : items) w.add_tensor(it.name, it.type, it.ne, [&it] { return tensor_bytes(it); });
}

// llama-quantize's tensor order (llama_model_loader's weight_name_comparer): tensors outside the
// blocks first, then by block number, by name within each.
bool llama_tensor_order(const Item& a, const Item& b) {
  auto layer = [](const std::string& n) {
    int l = -1;
    std::sscanf(n.c_str(), "blk.%d.", &l);
    return l;
  };
  const int la = layer(a.name), lb = layer(b.name);
  return la != lb ? la < lb : a.name < b.name;
}

// Elements per block (ggml_blck_size) of the types locr writes.
int64_t block_size(GgmlType t) {
  switch (t) {
    case GgmlType::kQ8_0:
    case GgmlType::kQ5_0: return 32;
    case GgmlType::kQ4_K:
    case GgmlType::kQ6_K: return 256;
    default: return 1;
  }
}

const char* type_name(GgmlType t) {
  const io::GgmlTypeInfo* i = io::ggml_type_info(static_cast<uint32_t>(t));
  return i ? i->name : "?";
}

}  // namespace export_detail

using namespace export_detail;

GgufOutType parse_gguf_out_type(const std::string& s) {
  std::string k = s;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (k == "f32") return GgufOutType::kF32;
  if (k == "f16") return GgufOutType::kF16;
  if (k == "bf16") return GgufOutType::kBF16;
  if (k == "q8_0") return GgufOutType::kQ8_0;
  if (k == "q4_k_m") return GgufOutType::kQ4_K_M;
  if (k.rfind("q4_k", 0) == 0 || k.rfind("q5_k", 0) == 0 || k.rfind("q6_k", 0) == 0 || k.rfind("q4_", 0) == 0)
    fail(ErrorKind::kInvalidArgument, "--type ", s, " is not supported yet: locr quantize writes q4_k_m, q8_0, f16, "
         "bf16 or f32 (for other K-quants, run llama.cpp's llama-quantize on an f16/bf16 file locr wrote)");
  fail(ErrorKind::kInvalidArgument, "--type ", s.empty() ? std::string("''") : s, " is not a GGUF type locr quantize "
       "writes: use q4_k_m, q8_0, f16, bf16 or f32");
}

const char* gguf_out_type_name(GgufOutType t) {
  switch (t) {
    case GgufOutType::kF32: return "f32";
    case GgufOutType::kF16: return "f16";
    case GgufOutType::kBF16: return "bf16";
    case GgufOutType::kQ8_0: return "q8_0";
    case GgufOutType::kQ4_K_M: return "q4_k_m";
  }
  return "?";
}

// llama.cpp's Q4_K_M mix for a qwen3 model without an importance matrix (llama-quant.cpp,
// llama_tensor_get_type_impl with LLAMA_FTYPE_MOSTLY_Q4_K_M): the head (output.weight, or
// token_embd when the embeddings are tied) Q6_K, or Q8_0 when its rows are not whole 256-blocks;
// attn_v and ffn_down of the use_more_bits layers Q6_K (with one layer per tensor, the counters are
// the layer index); every other 2-D weight Q4_K.
io::GgmlType q4_k_m_choice(const std::string& name, int64_t cols, int n_layers, bool tied) {
  auto use_more_bits = [](int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; };
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  if (name == "output.weight" || (tied && name == "token_embd.weight"))
    return cols % 256 != 0 ? GgmlType::kQ8_0 : GgmlType::kQ6_K;
  // llama-quant.cpp's category_is_attn_v takes attn_qkv (Qwen3.5's DeltaNet input projection) with
  // attn_v; with one of them per block, its counter is the block number, as ffn_down's is.
  if ((name.find("attn_v.weight") != std::string::npos || name.find("attn_qkv.weight") != std::string::npos ||
       name.find("ffn_down") != std::string::npos) &&
      use_more_bits(layer, n_layers))
    return GgmlType::kQ6_K;
  return GgmlType::kQ4_K;
}

// llama-quant.cpp tensor_type_fallback: when ne[0] % ggml_blck_size(type) != 0, Q4_K -> Q5_0,
// Q6_K -> Q8_0, a 32-block type (Q8_0) stays; then "must use F16 due to unusual shape" when the
// rows are not whole blocks of that either.
io::GgmlType llama_quantize_fallback(io::GgmlType type, int64_t cols) {
  if (cols % block_size(type) == 0) return type;
  GgmlType t = type;
  if (type == GgmlType::kQ4_K) t = GgmlType::kQ5_0;
  else if (type == GgmlType::kQ6_K) t = GgmlType::kQ8_0;
  else if (block_size(type) > 32)
    fail(ErrorKind::kInternal, "no tensor type fallback is defined for type ", type_name(type));
  return cols % block_size(t) == 0 ? t : GgmlType::kF16;
}

// convert_hf_to_gguf.py (ModelBase.prepare_tensors): gguf.quants.quantize raises QuantError for a
// Q8_0 tensor whose last dimension is not whole 32-blocks, and the converter writes it as F16.
io::GgmlType converter_fallback(io::GgmlType type, int64_t cols) {
  return type == GgmlType::kQ8_0 && cols % 32 != 0 ? GgmlType::kF16 : type;
}

io::GgmlType q4_k_m_type(const std::string& name, int64_t cols, int n_layers, bool tied) {
  return llama_quantize_fallback(q4_k_m_choice(name, cols, n_layers, tied), cols);
}

// ggml-quants.c quantize_row_q5_0_ref (block_q5_0: ggml_half d, uint8_t qh[4], uint8_t qs[16]).
void quantize_row_q5_0(const float* x, void* y, int64_t n) {
  if (n % 32 != 0) fail(ErrorKind::kInternal, "quantize_row_q5_0: ", n, " is not a multiple of 32");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / 32; ++b, x += 32, out += 22) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(out, &dh, 2);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[16 + j] * id;
      const uint8_t xi0 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x0 + 16.5f)));
      const uint8_t xi1 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x1 + 16.5f)));
      out[6 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(out + 2, &qh, 4);
  }
}

namespace export_detail {

void add_general(io::GgufWriter& g, const std::string& arch, const std::string& type, const std::string& dir,
                 const std::string& name, const std::vector<Item>& items) {
  g.add_string("general.architecture", arch);
  g.add_string("general.type", type);
  add_gguf_sampling(g, dir);
  g.add_string("general.name", name);
  g.add_string("general.size_label", size_label(elements(items)));
}

void add_clip_vision(io::GgufWriter& g, const ClipVision& c) {
  g.add_u32("general.file_type", c.file_type);
  g.add_bool("clip.has_vision_encoder", true);
  g.add_u32("clip.vision.projection_dim", c.projection_dim);
  g.add_u32("clip.vision.image_size", c.image_size);
  g.add_u32("clip.vision.patch_size", c.patch_size);
  g.add_u32("clip.vision.embedding_length", c.hidden);
  g.add_u32("clip.vision.feed_forward_length", c.ffn);
  g.add_u32("clip.vision.block_count", c.blocks);
  g.add_u32("clip.vision.attention.head_count", c.heads);
  g.add_array("clip.vision.image_mean", io::GgufValueType::kF32, json::array({c.mean[0], c.mean[1], c.mean[2]}));
  g.add_array("clip.vision.image_std", io::GgufValueType::kF32, json::array({c.std[0], c.std[1], c.std[2]}));
}

void settle_types(std::vector<Item>& text, std::vector<Item>& mm, bool k_mix, int n_layers, bool tied,
                  const std::string& text_path, const std::string& mmproj_path, GgufExportResult* res) {
  for (std::vector<Item>* items : {&text, &mm})
    for (Item& it : *items) {
      if (it.ne.size() < 2) continue;
      const bool in_mmproj = items == &mm, by_llama_quantize = k_mix && !in_mmproj && it.type == GgmlType::kQ4_K;
      const GgmlType chosen = by_llama_quantize ? q4_k_m_choice(it.name, it.ne[0], n_layers, tied) : it.type;
      it.type = by_llama_quantize ? llama_quantize_fallback(chosen, it.ne[0]) : converter_fallback(chosen, it.ne[0]);
      if (it.type != chosen) res->fallbacks.push_back({in_mmproj, it.name, it.ne[0], chosen, it.type});
      if (it.ne[0] % block_size(it.type) != 0)
        fail(ErrorKind::kInternal, "quantize: tensor '", it.name, "' of ", it.ne[0], " columns written as ",
             type_name(it.type));
      switch (it.type) {
        case GgmlType::kQ4_K: ++res->q4_k; break;
        case GgmlType::kQ5_0: ++res->q5_0; break;
        case GgmlType::kQ6_K: ++res->q6_k; break;
        case GgmlType::kQ8_0: ++res->q8_0; break;
        default: continue;
      }
      ++res->quantized;
    }
  for (const bool in_mmproj : {false, true}) {
    std::string list;
    int n = 0;
    for (const GgufFallback& f : res->fallbacks) {
      if (f.mmproj != in_mmproj) continue;
      list += std::string(n++ ? ", " : "") + f.name + " (" + std::to_string(f.cols) + " columns) " +
              type_name(f.chosen) + " -> " + type_name(f.written);
    }
    if (n > 0)
      LOCR_WARN("quantize: ", in_mmproj ? mmproj_path : text_path, ": ", n, " tensor", n > 1 ? "s" : "", " whose rows "
                "are not whole blocks of the chosen type written in a wider one, as llama.cpp's ",
                k_mix && !in_mmproj ? "llama-quantize" : "converter", " does: ", list);
  }
}

}  // namespace export_detail

std::string default_mmproj_path(const std::string& text_path) {
  const std::filesystem::path p(text_path);
  return (p.parent_path() / ("mmproj-" + p.filename().string())).string();
}

GgufExportResult export_gguf(const std::string& dir, const std::string& text_path, const std::string& mmproj_path,
                             GgufOutType type) {
  if (!io::is_directory(dir))
    fail(ErrorKind::kNotFound, "model directory not found: ", dir, " (locr quantize reads a Hugging Face model "
         "directory: config.json, tokenizer.json, *.safetensors)");
  check_dir(text_path);
  check_dir(mmproj_path);
  if (std::filesystem::weakly_canonical(text_path) == std::filesystem::weakly_canonical(mmproj_path))
    fail(ErrorKind::kInvalidArgument, "the text GGUF and the mmproj GGUF would be the same file: ", text_path);

  const ModelConfig cfg = ModelConfig::from_file(io::join_path(dir, "config.json"));
  const json raw = read_json(io::join_path(dir, "config.json"));
  const json vraw = raw.contains("vision_config") && raw["vision_config"].is_object() ? raw["vision_config"] : json::object();
  const ProcessorConfig pc = load_processor_config(dir, 28);
  const io::SafetensorsSet st = io::SafetensorsSet::open_dir(dir);
  const ModelWeights w = load_weights(st, cfg);
  const TextConfig& t = cfg.text;
  const bool k_mix = type == GgufOutType::kQ4_K_M;
  const GgmlType wt = weight_type(type);
  // The mmproj of a q4_k_m export is the q8_0 one: llama-quantize does not take a clip model, and
  // Q8_0 is the smallest type llama.cpp's converter writes for it.
  const GgufOutType mm_type = k_mix ? GgufOutType::kQ8_0 : type;
  const GgmlType mwt = weight_type(mm_type);

  // The text model: the checkpoint's order by name (lm_head.weight, then model.language_model.*:
  // embed_tokens, layers.N in string order, norm), each layer's tensors by their HF names.
  std::vector<Item> text;
  auto mat = [&](std::vector<Item>& v, std::string name, const Matrix& m, GgmlType ty) {
    v.push_back({std::move(name), &m, ne_of(m, false), ty, {}});
  };
  auto vec = [&](std::vector<Item>& v, std::string name, const Matrix& m) {
    v.push_back({std::move(name), &m, ne_of(m, true), GgmlType::kF32, {}});
  };
  const bool untied = w.text.lm_head.data != w.text.embed_tokens.data;
  if (untied) mat(text, "output.weight", w.text.lm_head, wt);
  mat(text, "token_embd.weight", w.text.embed_tokens, wt);
  std::vector<int> order(static_cast<size_t>(t.num_hidden_layers));
  for (int i = 0; i < t.num_hidden_layers; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [](int a, int b) { return std::to_string(a) < std::to_string(b); });
  for (int i : order) {
    const TextLayerWeights& L = w.text.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    vec(text, p + "attn_norm.weight", L.input_layernorm);
    mat(text, p + "ffn_down.weight", L.down_proj, wt);
    mat(text, p + "ffn_gate.weight", L.gate_proj, wt);
    mat(text, p + "ffn_up.weight", L.up_proj, wt);
    vec(text, p + "ffn_norm.weight", L.post_attention_layernorm);
    vec(text, p + "attn_k_norm.weight", L.k_norm);
    mat(text, p + "attn_k.weight", L.k_proj, wt);
    mat(text, p + "attn_output.weight", L.o_proj, wt);
    vec(text, p + "attn_q_norm.weight", L.q_norm);
    mat(text, p + "attn_q.weight", L.q_proj, wt);
    mat(text, p + "attn_v.weight", L.v_proj, wt);
  }
  vec(text, "output_norm.weight", w.text.norm);

  // The mmproj: v.* (vision_encoder) then mm.* (vision_projection), by HF name.
  std::vector<Item> mm;
  const VisionConfig& v = cfg.vision;
  if (w.has_vision) {
    // patch_embd and patch_merger: F16 in an f16 file, F32 otherwise (MmprojModel.tensor_force_quant).
    const GgmlType forced = mm_type == GgufOutType::kF16 ? GgmlType::kF16 : GgmlType::kF32;
    vec(mm, "v.pre_ln.weight", w.vision.ln_pre);
    mm.push_back({"v.patch_embd.weight", &w.vision.patch_conv,
                  {v.patch_size, v.patch_size, v.num_channels, v.hidden_size}, forced, {}});
    // LlamaModel.permute on q/k: GGUF row unpermute_rows[r] holds HF row r.
    const std::vector<int64_t> row_of = unpermute_rows(v.num_attention_heads, v.hidden_size / v.num_attention_heads);
    std::vector<int64_t> row_from(row_of.size());
    for (size_t r = 0; r < row_of.size(); ++r) row_from[static_cast<size_t>(row_of[r])] = static_cast<int64_t>(r);
    std::vector<int> vorder(static_cast<size_t>(v.num_hidden_layers));
    for (int i = 0; i < v.num_hidden_layers; ++i) vorder[i] = i;
    std::sort(vorder.begin(), vorder.end(), [](int a, int b) { return std::to_string(a) < std::to_string(b); });
    for (int i : vorder) {
      const VisionLayerWeights& L = w.vision.layers[i];
      const std::string p = "v.blk." + std::to_string(i) + ".";
      mat(mm, p + "attn_k.weight", L.k_proj, mwt);
      mm.back().row_from = row_from;
      mat(mm, p + "attn_out.weight", L.o_proj, mwt);
      mat(mm, p + "attn_q.weight", L.q_proj, mwt);
      mm.back().row_from = row_from;
      mat(mm, p + "attn_v.weight", L.v_proj, mwt);
      vec(mm, p + "ln1.weight", L.attention_norm);
      mat(mm, p + "ffn_down.weight", L.down_proj, mwt);
      mat(mm, p + "ffn_gate.weight", L.gate_proj, mwt);
      mat(mm, p + "ffn_up.weight", L.up_proj, mwt);
      vec(mm, p + "ln2.weight", L.ffn_norm);
    }
    mat(mm, "mm.1.weight", w.projector.linear_1, mwt);
    mat(mm, "mm.2.weight", w.projector.linear_2, mwt);
    vec(mm, "mm.input_norm.weight", w.projector.norm);
    mat(mm, "mm.patch_merger.weight", w.projector.merging_layer, forced);
  }

  GgufExportResult res;
  if (k_mix) std::stable_sort(text.begin(), text.end(), llama_tensor_order);  // llama-quantize's order
  settle_types(text, mm, k_mix, t.num_hidden_layers, !untied, text_path, mmproj_path, &res);

  const std::string name = model_name(dir);
  {
    io::GgufWriter g;
    add_general(g, "qwen3", "model", dir, name, text);
    g.add_u32("qwen3.block_count", static_cast<uint32_t>(t.num_hidden_layers));
    g.add_u32("qwen3.context_length", static_cast<uint32_t>(t.max_position_embeddings));
    g.add_u32("qwen3.embedding_length", static_cast<uint32_t>(t.hidden_size));
    g.add_u32("qwen3.feed_forward_length", static_cast<uint32_t>(t.intermediate_size));
    g.add_u32("qwen3.attention.head_count", static_cast<uint32_t>(t.num_attention_heads));
    g.add_u32("qwen3.attention.head_count_kv", static_cast<uint32_t>(t.num_key_value_heads));
    g.add_f32("qwen3.rope.freq_base", static_cast<float>(t.rope_theta));
    g.add_f32("qwen3.attention.layer_norm_rms_epsilon", t.rms_norm_eps);
    g.add_u32("qwen3.attention.key_length", static_cast<uint32_t>(t.head_dim));
    g.add_u32("qwen3.attention.value_length", static_cast<uint32_t>(t.head_dim));
    if (!k_mix) {
      g.add_u32("general.file_type", file_type(type));
      g.add_u32("general.quantization_version", 2);
    }
    add_gguf_vocab(g, dir, t.vocab_size);
    if (k_mix) {  // llama-quantize sets these two last (gguf_set_val_u32 removes, then appends, a key)
      g.add_u32("general.quantization_version", 2);
      g.add_u32("general.file_type", file_type(type));
    }
    add_tensors(g, text);
    res.text_tensors = static_cast<int>(g.tensor_count());
    res.text_bytes = g.write(text_path);
  }
  if (!w.has_vision) {
    LOCR_WARN("quantize: the model has no vision encoder; no mmproj written");
    return res;
  }
  {
    io::GgufWriter g;
    add_general(g, "clip", "mmproj", dir, name, mm);
    add_clip_vision(g, {file_type(mm_type), static_cast<uint32_t>(t.hidden_size), static_cast<uint32_t>(v.image_size),
                        static_cast<uint32_t>(v.patch_size), static_cast<uint32_t>(v.hidden_size),
                        static_cast<uint32_t>(v.intermediate_size), static_cast<uint32_t>(v.num_hidden_layers),
                        static_cast<uint32_t>(v.num_attention_heads), pc.image_mean, pc.image_std});
    g.add_string("clip.projector_type", "lightonocr");
    g.add_f32("clip.vision.attention.layer_norm_epsilon",
              vraw.contains("layer_norm_eps") && vraw["layer_norm_eps"].is_number() ? vraw["layer_norm_eps"].get<float>()
                                                                                    : 1e-5f);
    const std::string act = vraw.value("hidden_act", std::string("silu"));
    if (act == "silu") g.add_bool("clip.use_silu", true);
    else if (act == "gelu") g.add_bool("clip.use_gelu", true);
    else fail(ErrorKind::kUnsupported, dir, "/config.json: vision_config.hidden_act '", act, "' (silu or gelu)");
    g.add_u32("clip.vision.spatial_merge_size", static_cast<uint32_t>(cfg.spatial_merge_size));
    g.add_u32("general.quantization_version", 2);
    add_tensors(g, mm);
    res.mmproj_tensors = static_cast<int>(g.tensor_count());
    res.mmproj_bytes = g.write(mmproj_path);
  }
  return res;
}

}  // namespace locr::model
