#include "toolkit/progress.h"

#include <cstdio>

namespace locr::toolkit {

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return s;
}

void ProgressBar::update(uint64_t done, uint64_t total, const std::string& extra) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int width = 30, filled = static_cast<int>(frac * width + 1e-9);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string amount;
  if (bytes_) {
    amount = human_bytes(static_cast<double>(done)) + " / " + human_bytes(static_cast<double>(total));
    if (secs > 0) amount += "  " + human_bytes(static_cast<double>(done) / secs) + "/s";
  } else {
    amount = std::to_string(done) + "/" + std::to_string(total);
  }
  std::fprintf(stderr, "\r%s [%s] %3.0f%%  %s  %.1fs%s%s\033[K", label_.c_str(), bar.c_str(), frac * 100, amount.c_str(), secs,
               extra.empty() ? "" : "  ", extra.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace locr::toolkit
