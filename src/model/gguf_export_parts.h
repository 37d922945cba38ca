// What both families' GGUF writers (`locr quantize`: model/lightonocr/gguf_export.h for LightOnOCR-2,
// model/qwen35/gguf_export.h for Qwen3.5) share: the tensor list, the bytes of a tensor in its GGUF
// type, and the converter's naming and metadata helpers (gguf_export_parts.cc). Internal to those
// writers; what their callers see is model/gguf_export_common.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "kernels/ops.h"
#include "model/gguf_export_common.h"

namespace locr::model::export_detail {

using kernels::Matrix;

// One tensor to write: a weight, its GGUF name, ne and type.
struct Item {
  std::string name;
  const Matrix* m = nullptr;  // a plain F32 / BF16 / F16 matrix holding the tensor's rows
  std::vector<int64_t> ne;
  io::GgmlType type = io::GgmlType::kF32;
  std::vector<int64_t> row_from;  // output row -> source row (a row permutation); empty: identity
};

nlohmann::json read_json(const std::string& path);
// The GGUF type of the 2-D weights and llama.cpp's LlamaFileType (general.file_type) of an --type.
io::GgmlType weight_type(GgufOutType t);
uint32_t file_type(GgufOutType t);
// The bytes of one tensor in its GGUF type, row by row from the matrix's dtype (threaded).
std::string tensor_bytes(const Item& it);
// gguf-py's model_weight_count_rounded_notation(n, min_digits=2) (general.size_label).
std::string size_label(int64_t n);
// Metadata.id_to_title over the converter's name heuristic for a model directory (general.name).
std::string model_name(const std::string& dir);
// ne (ggml order) of a [rows, cols] matrix, or of a vector when `vector`.
std::vector<int64_t> ne_of(const Matrix& m, bool vector);
// Fails naming the path when the directory a file would be written to does not exist.
void check_dir(const std::string& path);
int64_t elements(const std::vector<Item>& items);
void add_tensors(io::GgufWriter& w, const std::vector<Item>& items);
// llama-quantize's tensor order (llama_model_loader's weight_name_comparer): tensors outside the
// blocks first, then by block number, by name within each.
bool llama_tensor_order(const Item& a, const Item& b);
// Each 2-D item's final type, decided for every tensor before anything is written: with `k_mix`,
// the text model's Q4_K items get llama-quantize's Q4_K_M choice (q4_k_m_choice) and its fallbacks
// (llama_quantize_fallback); every other item the converter's (converter_fallback). Counts the
// quantized types in *res, lists the fallbacks there, and logs them (one warning per file).
void settle_types(std::vector<Item>& text, std::vector<Item>& mm, bool k_mix, int n_layers, bool tied,
                  const std::string& text_path, const std::string& mmproj_path, GgufExportResult* res);
// The keys every file starts with: general.architecture, general.type, general.sampling.* (from the
// model directory's generation_config.json), general.name, general.size_label (of `items`).
void add_general(io::GgufWriter& g, const std::string& arch, const std::string& type, const std::string& dir,
                 const std::string& name, const std::vector<Item>& items);
// The mmproj keys both families' converters write in this order: general.file_type,
// clip.has_vision_encoder, clip.vision.{projection_dim, image_size, patch_size, embedding_length,
// feed_forward_length, block_count, attention.head_count, image_mean, image_std}.
struct ClipVision {
  uint32_t file_type, projection_dim, image_size, patch_size, hidden, ffn, blocks, heads;
  std::array<float, 3> mean, std;
};
void add_clip_vision(io::GgufWriter& g, const ClipVision& c);
// Elements per block (ggml_blck_size) of the types locr writes, and a type's name.
int64_t block_size(io::GgmlType t);
const char* type_name(io::GgmlType t);

}  // namespace locr::model::export_detail
