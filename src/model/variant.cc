#include "model/variant.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace locr::model {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The path's components, the last first; "models--org--name" (the Hugging Face cache) becomes "org/name".
std::vector<std::string> path_names(const std::string& dir) {
  std::vector<std::string> parts;
  size_t from = 0;
  while (from <= dir.size()) {
    size_t to = dir.find('/', from);
    if (to == std::string::npos) to = dir.size();
    if (to > from) parts.push_back(dir.substr(from, to - from));
    from = to + 1;
  }
  std::reverse(parts.begin(), parts.end());
  for (std::string& p : parts) {
    if (p.rfind("models--", 0) == 0) {
      p = p.substr(8);
      const size_t sep = p.find("--");
      if (sep != std::string::npos) p.replace(sep, 2, "/");
    }
  }
  return parts;
}

}  // namespace

std::string ModelVariant::describe() const {
  if (!known()) return "an unknown LightOnOCR checkpoint";
  std::string what = "LightOnOCR-" + std::to_string(generation);
  if (grounding) what += ", with the grounding mode";
  else if (figure_boxes) what += " with figure boxes";
  else what += ", plain OCR only";
  return name + " (" + what + ")";
}

ModelVariant variant_from_name(const std::string& name) {
  // Spaces and underscores as dashes: llama.cpp's converter writes general.name title-cased with
  // spaces ("LightOnOCR 2 1B Bbox Soup").
  std::string n = lower(name);
  for (char& c : n)
    if (c == ' ' || c == '_') c = '-';
  ModelVariant v;
  const size_t at = n.find("lightonocr-");
  if (at == std::string::npos) return v;
  const std::string rest = n.substr(at + 11);
  if (rest.rfind("1b", 0) == 0) v.generation = 1;  // LightOnOCR-1B-1025 (and its 0.9B-32k/16k kin below)
  else if (rest.rfind("0.9b", 0) == 0) v.generation = 1;
  else if (rest.size() >= 2 && std::isdigit(static_cast<unsigned char>(rest[0])) && rest[1] == '-')
    v.generation = rest[0] - '0';
  if (v.generation == 0) return v;
  v.name = name;
  if (v.generation >= 3) {
    v.grounding = true;
    v.figure_boxes = true;
  } else if (v.generation == 2) {
    v.figure_boxes = rest.find("-bbox") != std::string::npos;
  }
  return v;
}

ModelVariant detect_variant(const std::string& dir, const nlohmann::json* config) {
  // The directory's own name; in the Hugging Face cache the repository's, above snapshots/<rev>.
  std::vector<std::string> names = path_names(dir);
  if (names.size() >= 3 && names[1] == "snapshots") names.erase(names.begin(), names.begin() + 2);
  if (!names.empty()) {
    ModelVariant v = variant_from_name(names.front());
    if (v.known()) return v;
  }
  if (config && config->is_object()) {
    auto it = config->find("_name_or_path");
    if (it != config->end() && it->is_string()) return variant_from_name(it->get<std::string>());
  }
  return {};
}

}  // namespace locr::model
