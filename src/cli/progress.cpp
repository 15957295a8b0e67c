#include "progress.hpp"

#include <fmt/format.h>

namespace kagent::cli {

BatchProgress::BatchProgress(int total, int already_done, bool live, std::FILE* out)
    : total_(total), done_(already_done), live_(live), out_(out) {}

std::string BatchProgress::clock(double s) {
  if (s < 0) return "-";
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

double BatchProgress::eta_s(double elapsed_s, int finished_now, int remaining) {
  if (finished_now <= 0) return -1;
  return elapsed_s / finished_now * remaining;
}

std::string BatchProgress::record_line(const report::ResultRecord& r) {
  // bench --samples: the problem's sample, "level1/19_ReLU/3.cu"
  std::string line = fmt::format("{:<48} {:<13}", r.sample.empty() ? r.problem : r.problem + "/" + r.sample, r.status);
  if (r.correct()) {
    line += fmt::format(" tier {}", r.score.tier);
    if (r.score.speedup_vs_eager) line += fmt::format("  {:.2f}x eager", *r.score.speedup_vs_eager);
    if (r.score.speedup_vs_compile) line += fmt::format("  {:.2f}x compile", *r.score.speedup_vs_compile);
  } else if (!r.error.empty() && r.status != "unsolved") {
    std::string first = r.error.substr(0, r.error.find('\n'));
    if (first.size() > 90) first = first.substr(0, 87) + "...";
    line += " " + first;
  }
  if (r.wall_s && *r.wall_s >= 0.05) line += fmt::format("  ({:.1f} s)", *r.wall_s);
  line.erase(line.find_last_not_of(' ') + 1);
  return line;
}

void BatchProgress::started(const std::string& problem, int gpu) {
  running_[problem] = gpu;
  draw();
}

void BatchProgress::finished(const report::ResultRecord& r) {
  running_.erase(r.sample.empty() ? r.problem : r.problem + "/" + r.sample);
  ++done_;
  ++done_now_;
  if (!r.correct()) ++failed_;
  if (live_) std::fputs("\r\033[K", out_);  // clear the bar; the log line takes its place
  std::fputs(fmt::format("[{:>{}}/{}] {}\n", done_, std::to_string(total_).size(), total_, record_line(r)).c_str(),
             out_);
  draw();
}

void BatchProgress::draw() {
  if (!live_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  constexpr int kWidth = 24;
  const int filled = total_ > 0 ? kWidth * done_ / total_ : kWidth;
  std::string now;
  for (const auto& [p, gpu] : running_) {
    if (!now.empty()) now += ", ";
    now += fmt::format("{}@{}", p.substr(p.rfind('/') + 1), gpu);
    if (now.size() > 60) break;
  }
  std::string bar = fmt::format("[{}{}] {}/{}  not correct {}  elapsed {}  ETA {}  {}", std::string(filled, '#'),
                                std::string(kWidth - filled, '.'), done_, total_, failed_, clock(elapsed),
                                clock(eta_s(elapsed, done_now_, total_ - done_)), now);
  std::fputs(fmt::format("\r\033[K{}", bar.substr(0, 160)).c_str(), out_);
  std::fflush(out_);
}

void BatchProgress::close() {
  if (live_) std::fputs("\r\033[K", out_);
  std::fflush(out_);
}

}  // namespace kagent::cli
