// Who holds a port (serve/port_holder.hpp): this process, once it listens; nobody on a closed port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "kagent/serve/port_holder.hpp"

namespace {

// A listening IPv4 socket on an ephemeral port of 127.0.0.1: its descriptor and port.
std::pair<int, int> listen_somewhere() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4) != 0) return {-1, 0};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return {fd, ntohs(a.sin_port)};
}

}  // namespace

TEST(PortHolder, NamesThisProcessWhileItListens) {
  auto [fd, port] = listen_somewhere();
  ASSERT_GE(fd, 0);
  const std::string holder = kagent::serve::port_holder(port);
  EXPECT_EQ(holder.rfind("pid " + std::to_string(getpid()) + " (", 0), 0u) << holder;
  close(fd);
  EXPECT_EQ(kagent::serve::port_holder(port), "") << "nobody listens there now";
}
