// Reading config files: typed fields of a JSON object with errors that name the file and the key,
// and a JSON file as a whole. Shared by every architecture's config loader.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/file.h"

namespace locr::model {

// obj[key] into *out when present and not null; kInvalidArgument naming `where` and the key when it
// has the wrong type.
template <typename T>
void read_field(const nlohmann::json& obj, const char* key, T* out, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return;
  try {
    *out = obj[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    fail(ErrorKind::kInvalidArgument, where, ": field '", key, "' has the wrong type (", obj[key].dump(), ")");
  }
}

inline void require_positive(int v, const char* key, const std::string& where) {
  if (v <= 0) fail(ErrorKind::kInvalidArgument, where, ": '", key, "' must be positive, got ", v);
}

// The JSON document in `path`; kInvalidArgument naming the file when it does not parse.
inline nlohmann::json read_json_file(const std::string& path) {
  try {
    return nlohmann::json::parse(io::read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kInvalidArgument, "invalid JSON in ", path, ": ", e.what());
  }
}

}  // namespace locr::model
