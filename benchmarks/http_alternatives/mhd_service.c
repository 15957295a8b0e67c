/* The HTTP side of `kagent serve`, as far as libmicrohttpd (Debian's libmicrohttpd-dev) can be made to
 * shape it: the alternative to Boost.Beast that the HTTP layer was measured against
 * (benchmarks/http_alternatives/README.md). Not part of kagent: a program for benchmarks/http_load.py
 * (`--server`), answering as kagent serve does without a GPU: GET /health 503, POST /v1/evaluate
 * 503 after its body (413 past 8 MiB), anything else 404.
 *
 * Its bounds are libmicrohttpd's own: an epoll thread pool (--http-threads, 2), at most
 * --max-connections in all (8192) and --max-client-connections per address (2048), backlog 4096,
 * a header buffer of 16 KiB (--max-header-kb), and --header-timeout seconds (10) as the
 * connection's timeout, which libmicrohttpd counts from the last byte received, not from the
 * connection's start. Prints "listening on http://127.0.0.1:PORT" as kagent serve does; SIGTERM
 * stops it.
 *
 * Usage: mhd_service [--port N] [--http-threads N] [--max-connections N] [--max-client-connections N]
 *                    [--max-header-kb N] [--header-timeout S] [other kagent serve flags, ignored] */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BODY_LIMIT (8u << 20)

struct request_state {
  size_t body;
};

static const char kUnavailable[] = "{\"error\": {\"status\": 503, \"message\": \"no GPU\"}}\n";

static enum MHD_Result answer(struct MHD_Connection* c, unsigned status, const char* body) {
  struct MHD_Response* r = MHD_create_response_from_buffer(strlen(body), (void*)body, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result on_request(void* cls, struct MHD_Connection* c, const char* url, const char* method,
                                  const char* version, const char* upload, size_t* upload_size, void** state) {
  (void)cls;
  (void)version;
  (void)upload;
  struct request_state* s = *state;
  /* The first call: the header is complete, no body read yet. Routes are checked here; a request
   * let through is answered on a later call (answering on the first closes the connection). */
  if (s == NULL) {
    const int health = strcmp(url, "/health") == 0;
    if (!health && strcmp(url, "/v1/evaluate") != 0) return answer(c, 404, "{\"error\": \"no such endpoint\"}\n");
    if (strcmp(method, health ? "GET" : "POST") != 0) return answer(c, 405, "{\"error\": \"method\"}\n");
    s = calloc(1, sizeof *s);
    if (s == NULL) return MHD_NO;
    *state = s;
    return MHD_YES;
  }
  if (*upload_size != 0) { /* a piece of the body: counted, not kept */
    s->body += *upload_size;
    *upload_size = 0;
    return s->body > BODY_LIMIT ? MHD_NO : MHD_YES; /* MHD_NO closes the connection */
  }
  return answer(c, 503, kUnavailable);
}

static void on_completed(void* cls, struct MHD_Connection* c, void** state, enum MHD_RequestTerminationCode why) {
  (void)cls;
  (void)c;
  (void)why;
  free(*state);
  *state = NULL;
}

static volatile sig_atomic_t stop_asked = 0;
static void on_signal(int sig) {
  (void)sig;
  stop_asked = 1;
}

int main(int argc, char** argv) {
  unsigned port = 0, threads = 2, max_connections = 8192, per_client = 2048, header_kb = 16, timeout_s = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "--port") == 0)
      port = v;
    else if (strcmp(argv[i], "--http-threads") == 0)
      threads = v;
    else if (strcmp(argv[i], "--max-connections") == 0)
      max_connections = v;
    else if (strcmp(argv[i], "--max-client-connections") == 0)
      per_client = v;
    else if (strcmp(argv[i], "--max-header-kb") == 0)
      header_kb = v;
    else if (strcmp(argv[i], "--header-timeout") == 0)
      timeout_s = v;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct MHD_Daemon* d = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, on_request, NULL,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr*)&addr, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
      max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_client, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      (size_t)header_kb << 10, MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
  if (d == NULL) {
    fprintf(stderr, "mhd_service: the daemon did not start\n");
    return 3;
  }
  const union MHD_DaemonInfo* info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  printf("mhd_service (libmicrohttpd %s) listening on http://127.0.0.1:%u\n", MHD_get_version(),
         info ? info->port : port);
  fflush(stdout);
  while (!stop_asked) pause();
  MHD_stop_daemon(d);
  return 0;
}
