// A one-line progress bar on stderr (redrawn with \r at most ~10 times a second), used by
// make-model, pull and bench. Disabled bars print nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace locr::toolkit {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled, bool bytes = true) : label_(std::move(label)), enabled_(enabled), bytes_(bytes) {}
  ~ProgressBar() { finish(); }
  void set_label(std::string label) { label_ = std::move(label); }
  // Redraws when due (or when done == total).
  void update(uint64_t done, uint64_t total, const std::string& extra = "");
  void finish();  // final newline if anything was drawn

 private:
  std::string label_;
  bool enabled_, bytes_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

// "1.5 GB", "12.0 MB", ...
std::string human_bytes(double bytes);

}  // namespace locr::toolkit
