// Stop strings over streamed text. Text that could still turn into a stop string is held back,
// so a stop string never leaks to the client, not even partly; when one completes, the text
// before it (and the stop string itself with include_stop_str_in_output) is released and the
// choice is over. Works on complete UTF-8 text (the detokenizer's output), byte-wise.
#pragma once

#include <string>
#include <vector>

namespace locr::runtime {

class StopMatcher {
 public:
  StopMatcher(std::vector<std::string> stops, bool include_stop);

  // Appends `text`; returns what can be released now.
  std::string push(const std::string& text);
  // Releases whatever is held back (the choice ended for another reason).
  std::string flush();

  bool matched() const { return matched_; }
  const std::string& stop() const { return stop_; }  // the stop string that matched

 private:
  std::vector<std::string> stops_;
  bool include_;
  std::string held_;
  bool matched_ = false;
  std::string stop_;
};

}  // namespace locr::runtime
