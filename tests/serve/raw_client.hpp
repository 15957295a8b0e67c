// Raw-socket clients for the HTTP layer's tests (test_http_hostile.cpp, test_service_load.cpp):
// connections that send exactly the bytes a test wants, or nothing, and read what arrives until the
// server closes or a deadline passes. Header-only, inline: each test file is its own program part.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

namespace kagent::test::raw {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The soft descriptor limit raised towards `want` (the hard limit permitting); what it is now.
inline rlim_t raise_fd_limit(rlim_t want) {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur < want) {
    r.rlim_cur = std::min(want, r.rlim_max);
    setrlimit(RLIMIT_NOFILE, &r);
    getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur;
}

inline long peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

inline int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Sends what it can of `data` (the server may close first: that is an answer too).
inline void send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// What arrives until the server closes or `limit` passes.
inline std::string read_all(int fd, std::chrono::milliseconds limit) {
  std::string out;
  const auto end = Clock::now() + limit;
  char buf[65536];
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (poll(&p, 1, static_cast<int>(std::max<long>(left, 1))) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The status codes of the responses in `raw`, in order.
inline std::vector<int> statuses(const std::string& raw) {
  std::vector<int> out;
  for (size_t at = raw.find("HTTP/1.1 "); at != std::string::npos; at = raw.find("HTTP/1.1 ", at + 1))
    out.push_back(std::stoi(raw.substr(at + 9, 3)));
  return out;
}

struct Exchange {
  std::string raw;
  double seconds = 0;
};

inline Exchange talk(int port, const std::string& request, std::chrono::milliseconds limit = 5000ms) {
  const auto t0 = Clock::now();
  const int fd = connect_to(port);
  if (fd < 0) return {};
  send_all(fd, request);
  Exchange e{read_all(fd, limit), 0};
  e.seconds = seconds_since(t0);
  close(fd);
  return e;
}

// Connections held open until this goes: `idle` ones that send nothing, and `slow` ones that sent
// `request_line` and then one byte at each drip() (never the end of their header).
class HeldConnections {
 public:
  HeldConnections(int port, int idle, int slow, const std::string& request_line) {
    for (int i = 0; i < idle; ++i) idle_.push_back(connect_to(port));
    for (int i = 0; i < slow; ++i) {
      slow_.push_back(connect_to(port));
      send_all(slow_.back(), request_line);
    }
  }
  ~HeldConnections() {
    for (int fd : idle_) close(fd);
    for (int fd : slow_) close(fd);
  }
  HeldConnections(const HeldConnections&) = delete;
  HeldConnections& operator=(const HeldConnections&) = delete;
  // Connections that could not be made.
  long failed() const {
    return std::count(idle_.begin(), idle_.end(), -1) + std::count(slow_.begin(), slow_.end(), -1);
  }
  void drip() {
    for (int fd : slow_) send_all(fd, "X");
  }

 private:
  std::vector<int> idle_, slow_;
};

// GET /health `n` times, one connection each, the held connections dripping every 10 probes.
struct HealthProbes {
  std::vector<double> seconds;  // sorted
  std::string not_ok;           // the first exchange that was not one 200 (the probing stops there)
};
inline HealthProbes probe_health(int port, HeldConnections& held, int n) {
  HealthProbes out;
  for (int i = 0; i < n; ++i) {
    const Exchange e = talk(port, "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 2000ms);
    if (statuses(e.raw) != std::vector<int>{200}) {
      out.not_ok = e.raw.empty() ? "no answer" : e.raw;
      break;
    }
    out.seconds.push_back(e.seconds);
    if (i % 10 == 0) held.drip();
  }
  std::sort(out.seconds.begin(), out.seconds.end());
  return out;
}

}  // namespace kagent::test::raw
