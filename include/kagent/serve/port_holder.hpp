#pragma once
// Who holds a TCP port: for kagent serve's "cannot listen" error, so that a user whose port is
// taken learns by what (another kagent serve, a stale process) without reaching for ss or lsof.
#include <string>

namespace kagent::serve {

// "pid N (COMMAND)" of a process of this user listening on `port` (IPv4 or IPv6, any address), read
// from /proc/net/tcp{,6} and /proc/PID/fd; "" when none is found (no listener, or one this user
// cannot see, such as another user's process).
std::string port_holder(int port);

}  // namespace kagent::serve
