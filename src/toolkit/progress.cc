#include "toolkit/progress.h"

#include <unistd.h>

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

ProgressBar::ProgressBar(std::string label, bool enabled, bool bytes)
    : label_(std::move(label)), enabled_(enabled), bytes_(bytes), tty_(::isatty(2) != 0), last_(start_) {}

std::string ProgressBar::line(uint64_t done, uint64_t total, const std::string& extra, double secs) const {
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int width = 30, filled = static_cast<int>(frac * width + 1e-9);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::string amount;
  if (bytes_) {
    amount = human_bytes(static_cast<double>(done)) + " / " + human_bytes(static_cast<double>(total));
    if (secs > 0) amount += "  " + human_bytes(static_cast<double>(done) / secs) + "/s";
  } else {
    amount = std::to_string(done) + "/" + std::to_string(total);
  }
  char head[64];
  std::snprintf(head, sizeof head, "] %3.0f%%  ", frac * 100);
  char tail[32];
  std::snprintf(tail, sizeof tail, "  %.1fs", secs);
  return label_ + " [" + bar + head + amount + tail + (extra.empty() ? "" : "  ") + extra;
}

void ProgressBar::update(uint64_t done, uint64_t total, const std::string& extra) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(now - start_).count();
  if (!tty_) {  // a plain line every 10 s, and the last state at finish()
    done_ = done;
    total_ = total;
    extra_ = extra;
    drawn_ = true;
    if (now - last_ >= std::chrono::seconds(10)) {
      last_ = now;
      std::fprintf(stderr, "%s\n", line(done, total, extra, secs).c_str());
    }
    return;
  }
  if (done < total && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  std::fprintf(stderr, "\r%s\033[K", line(done, total, extra, secs).c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) {
    if (tty_) {
      std::fprintf(stderr, "\n");
    } else {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::fprintf(stderr, "%s\n", line(done_, total_, extra_, secs).c_str());
    }
  }
  drawn_ = false;
}

}  // namespace locr::toolkit
