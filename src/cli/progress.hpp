#pragma once
// Progress of a batch on the terminal: one line per finished problem (what a log file or a Slurm
// output keeps), and on a terminal also a live bar below them with done/total, failures, elapsed
// time and ETA, and the problems in flight.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "kagent/report/results.hpp"

namespace kagent::cli {

class BatchProgress {
 public:
  // total: problems of this batch including `already_done` (records kept from a resumed run).
  BatchProgress(int total, int already_done, bool live, std::FILE* out);
  // `problem`: the problem's id, or "id/sample" for a sample (bench --samples).
  void started(const std::string& problem, int gpu);
  void finished(const report::ResultRecord& r);
  void close();  // ends the live bar's line

  // One finished problem as a log line (also used without a terminal).
  static std::string record_line(const report::ResultRecord& r);
  // "1:05:07", "3:12"
  static std::string clock(double seconds);
  // Seconds left at the rate seen so far; negative when nothing has finished yet.
  static double eta_s(double elapsed_s, int finished_now, int remaining);

 private:
  void draw();
  int total_, done_, done_now_ = 0, failed_ = 0;
  bool live_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::map<std::string, int> running_;  // problem -> gpu
};

}  // namespace kagent::cli
