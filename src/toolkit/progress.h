// A one-line progress bar on stderr (redrawn with \r at most ~10 times a second), used by
// make-model, pull, bench and ocr. Disabled bars print nothing. When stderr is not a terminal (a
// log file, a pipe, a container's log) nothing is redrawn: a plain line every 10 s, and the last
// state at finish(), so logs get no carriage returns or escape codes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace locr::toolkit {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled, bool bytes = true);
  ~ProgressBar() { finish(); }
  void set_label(std::string label) { label_ = std::move(label); }
  // Redraws when due (or when done == total).
  void update(uint64_t done, uint64_t total, const std::string& extra = "");
  void finish();  // final newline if anything was drawn

 private:
  std::string line(uint64_t done, uint64_t total, const std::string& extra, double secs) const;

  std::string label_;
  bool enabled_, bytes_, tty_;
  bool drawn_ = false;
  uint64_t done_ = 0, total_ = 0;  // the last state, for a non-terminal's final line
  std::string extra_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_;
};

// "1.5 GB", "12.0 MB", ...
std::string human_bytes(double bytes);

}  // namespace locr::toolkit
