// What both families' GGUF writers share (model/gguf_export_parts.h): the tensor list, the bytes of a
// tensor in its GGUF type, and the converter's naming and metadata helpers.
#include "model/gguf_export_parts.h"

#include <algorithm>
#include <cctype>
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
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"
#include "model/gguf_export_vocab.h"

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

}  // namespace locr::model
