// kagent-jail-init: pid 1 of a jail's pid namespace (include/kagent/sandbox/jail.hpp). kagent
// executes it, linked statically and from a memfd, as the last step of a jail's set-up, so that
// pid 1 inside holds nothing of kagent (its command line, environment and memory are this small
// program's). It runs PROGRAM as its child and:
//   - forwards SIGTERM, SIGINT and SIGHUP to it;
//   - reaps every orphan reparented to it;
//   - when PROGRAM ends, writes "status N" (the raw wait status) to the --report-fd descriptor, if
//     any, and exits with PROGRAM's exit code, or 128+N when signal N killed it; its exit ends
//     every process left in the namespace.
// An exec failure of PROGRAM is one line on stderr (and the report descriptor) and exit 127.
// Usage: jail-init --report-fd N -- PROGRAM ARGS...   (N = -1: no report descriptor)
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "kagent/sandbox/exit_codes.hpp"

extern char** environ;

namespace {

volatile sig_atomic_t g_program = 0;
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP};

void forward(int sig) {
  if (g_program > 0) kill(g_program, sig);
}

void put(int fd, const char* text) {
  size_t n = std::strlen(text);
  while (fd >= 0 && n > 0) {
    ssize_t w = write(fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

// Decimal text of v (v >= 0) in buf.
const char* decimal(char (&buf)[24], long v) {
  char* p = buf + sizeof buf - 1;
  *p = '\0';
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && p > buf);
  return p;
}

void say_failure(int report, const char* step, const char* path, int err) {
  char num[24];
  const char* desc = strerrordesc_np(err);
  for (int fd : {2, report}) {
    if (fd < 0) continue;
    if (fd == 2) put(fd, "kagent sandbox: jail-init: ");
    put(fd, step);
    put(fd, " ");
    put(fd, path);
    put(fd, ": ");
    put(fd, desc != nullptr ? desc : "unknown error");
    put(fd, " (errno ");
    put(fd, decimal(num, err));
    put(fd, ")\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int report = -1;
  int i = 1;
  if (i + 1 < argc && std::strcmp(argv[i], "--report-fd") == 0) {
    report = std::atoi(argv[i + 1]);
    i += 2;
  }
  if (i >= argc || std::strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
    put(2, "usage: jail-init --report-fd N -- PROGRAM ARGS... (started by kagent as a jail's pid 1)\n");
    return 2;
  }
  char** program = argv + i + 1;
  if (report >= 0) fcntl(report, F_SETFD, FD_CLOEXEC);  // the program does not get it

  sigset_t forwarded, old;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &old);
  struct sigaction sa {};
  sa.sa_handler = forward;
  sa.sa_flags = SA_RESTART;
  for (int sig : kForwarded) sigaction(sig, &sa, nullptr);

  pid_t child = fork();
  if (child == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : kForwarded) sigaction(sig, &dfl, nullptr);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execve(program[0], program, environ);
    say_failure(report, "execute", program[0], errno);
    _exit(kagent::sandbox::kExecFailedExit);
  }
  if (child < 0) {
    say_failure(report, "fork for", program[0], errno);
    return kagent::sandbox::kSetupFailedExit;
  }
  g_program = child;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  // The program and what it starts alone hold the caller's pipes: their end is the caller's EOF.
  close(0);
  close(1);
  close(2);

  int status = 0;
  for (;;) {
    int st = 0;
    pid_t w = waitpid(-1, &st, 0);
    if (w == child) {
      status = st;
      break;
    }
    if (w < 0 && errno == ECHILD) break;  // cannot happen while the program lives
  }
  char num[24];
  put(report, "status ");
  put(report, decimal(num, status));
  put(report, "\n");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kagent::sandbox::kSetupFailedExit;
}
