#include "model/model.h"

namespace locr::model {

using nlohmann::json;

json Model::make_messages(const std::string* system, const std::string* prompt, int n_images) {
  json messages = json::array();
  if (system) messages.push_back({{"role", "system"}, {"content", *system}});
  if (n_images == 0) {
    messages.push_back({{"role", "user"}, {"content", prompt ? *prompt : std::string()}});
  } else {
    json content = json::array();
    for (int i = 0; i < n_images; ++i) content.push_back({{"type", "image"}});
    if (prompt) content.push_back({{"type", "text"}, {"text", *prompt}});
    messages.push_back({{"role", "user"}, {"content", content}});
  }
  return messages;
}

}  // namespace locr::model
