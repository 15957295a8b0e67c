// kagent serve: evaluations over HTTP, one worker per GPU (docs/serve.md). Binds 127.0.0.1 unless
// --host says otherwise, and then needs a bearer token (--token-env VAR names the variable that
// holds it). Without a GPU it still starts and answers 503 naming why, so that a readiness probe
// on /health keeps it out of a load balancer. Runs until SIGINT or SIGTERM: exit 0; 2 bad flags,
// 3 the address cannot be bound.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/judge/evaluator_backend.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/protocol/measure_preset.hpp"
#include "kagent/serve/service.hpp"

namespace kagent::cli {

namespace {

double seconds(std::chrono::milliseconds d) {
  return std::chrono::duration<double>(d).count();
}

struct ServeArgs {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string token_env, problems_root, gpus;
  int queue = 4096;  // four RL steps of 1024
  double queue_mb = 512;
  double max_body_mb = 64, max_source_mb = 1;
  int max_batch = 1024;  // one RL step
  int warm_problems = 16;
  double warm_memory = 0.5;
  int spare_servers = 1;
  double timeout_s = 60, max_timeout_s = 600, queue_timeout_s = 600;
  int build_jobs = -1;  // -1: default_prebuild_threads
  std::string preset = "default";
  std::string torch_ops = "fail";
  std::string baselines;  // --baselines FILE|DIR
  // The agent's episodes (serve/sessions.hpp).
  std::string sessions_dir;
  int max_sessions = 256;
  int session_steps = serve::SessionLimits{}.steps;
  double session_idle_s = 900;
  bool no_shell = false;
  // The HTTP layer (serve/http_server.hpp): its counts bound as they are, its sizes and times in
  // the flags' units, every default HttpLimits's own.
  serve::HttpLimits http;
  double max_header_kb = static_cast<double>(http.header_bytes) / 1024;
  double header_timeout_s = seconds(http.header_deadline), body_timeout_s = seconds(http.body_deadline),
         idle_timeout_s = seconds(http.idle_timeout);
};

std::atomic<bool> g_serve_stop{false};

void on_serve_signal(int) {
  g_serve_stop.store(true);
}

int run_serve(const ServeArgs& a) {
  serve::ServeOptions o;
  o.host = a.host;
  o.port = a.port;
  o.problems_root = std::filesystem::absolute(a.problems_root).lexically_normal();
  o.queue_capacity = static_cast<size_t>(a.queue);
  o.queue_bytes = static_cast<size_t>(a.queue_mb * (1 << 20));
  o.warm.max_problems = static_cast<size_t>(a.warm_problems);
  o.warm.memory_share = a.warm_memory;
  o.warm.spares = static_cast<size_t>(a.spare_servers);
  o.queue_timeout_s = a.queue_timeout_s;
  o.limits.max_body_bytes = static_cast<size_t>(a.max_body_mb * (1 << 20));
  o.limits.max_source_bytes = static_cast<size_t>(a.max_source_mb * (1 << 20));
  o.limits.max_batch = static_cast<size_t>(a.max_batch);
  o.limits.default_timeout_s = a.timeout_s;
  o.sessions.dir = a.sessions_dir.empty() ? std::filesystem::path() : std::filesystem::absolute(a.sessions_dir);
  o.sessions.max_sessions = static_cast<size_t>(a.max_sessions);
  o.sessions.idle_s = a.session_idle_s;
  o.sessions.most.steps = a.session_steps;
  o.sessions.shell = !a.no_shell;
  o.limits.max_timeout_s = a.max_timeout_s;
  o.limits.default_preset = std::string(measure_preset(a.preset).name);  // InputError naming the presets
  if (auto p = parse_torch_ops(a.torch_ops))
    o.limits.default_torch_ops = *p;
  else
    throw InputError(fmt::format("--torch-ops: '{}' is not one of {}", a.torch_ops, kTorchOpsChoices));
  if (!a.baselines.empty())
    o.limits.baselines = std::make_shared<const BaselinesFile>(BaselinesFile::read(a.baselines));
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); };
  o.http = a.http;
  o.http.header_bytes = static_cast<size_t>(a.max_header_kb * 1024);
  o.http.header_deadline = ms(a.header_timeout_s);
  o.http.body_deadline = ms(a.body_timeout_s);
  o.http.idle_timeout = ms(a.idle_timeout_s);
  o.http.write_deadline = ms(a.body_timeout_s);
  // Every connection is a descriptor: the soft limit raised towards what --max-connections needs
  // (with room for the workers' children and files), and the bound lowered to what the hard limit
  // allows, said.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    const rlim_t want = static_cast<rlim_t>(o.http.max_connections) + 1024;
    if (nofile.rlim_cur < want) {
      nofile.rlim_cur = std::min(want, nofile.rlim_max);
      setrlimit(RLIMIT_NOFILE, &nofile);
      getrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (nofile.rlim_cur < want) {
      const size_t fit = nofile.rlim_cur > 1024 + 64 ? static_cast<size_t>(nofile.rlim_cur) - 1024 : 64;
      spdlog::warn(
          "kagent serve: the descriptor limit is {} (ulimit -n, hard limit {}): --max-connections {} lowered "
          "to {}",
          static_cast<unsigned long long>(nofile.rlim_cur), static_cast<unsigned long long>(nofile.rlim_max),
          o.http.max_connections, fit);
      o.http.max_connections = std::min(o.http.max_connections, fit);
    }
  }
  if (a.timeout_s > a.max_timeout_s)
    throw InputError(fmt::format("--timeout {:g} is above --max-timeout {:g}", a.timeout_s, a.max_timeout_s));
  if (!a.token_env.empty()) {
    const char* t = std::getenv(a.token_env.c_str());
    if (t == nullptr || *t == '\0')
      throw InputError(
          fmt::format("--token-env {}: the variable is not set or empty (it holds the bearer token)", a.token_env));
    o.token = t;
    // What a client can send after "Bearer ": visible ASCII. HTTP strips the whitespace around a
    // field's value, so a token that begins or ends with a space (a stray newline from a file)
    // would refuse every client.
    for (const unsigned char c : o.token)
      if (c < 0x21 || c > 0x7e)
        throw InputError(fmt::format(
            "--token-env {}: the token holds a character a client cannot send in an Authorization header (byte "
            "0x{:02x}: whitespace, a control character or not ASCII); the token is what follows \"Bearer \"",
            a.token_env, c));
  }
  if (!serve::is_loopback(o.host) && o.token.empty())
    throw InputError(
        fmt::format("--host {} reaches other machines: give --token-env VAR, VAR holding the bearer token "
                    "every client must send",
                    o.host));

  // The GPUs of the existing selection: --gpus, else every GPU the driver reports.
  GpuInventory inv = query_gpus();
  o.gpus = a.gpus.empty() ? std::vector<int>{} : parse_gpus(a.gpus, inv);
  if (a.gpus.empty())
    for (const auto& g : inv.gpus) o.gpus.push_back(g.index);
  auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  if (o.gpus.empty())
    o.unavailable = fmt::format("no GPU to evaluate on: {}", inv.problem.empty() ? "no CUDA device" : inv.problem);
  else
    o.unavailable = judge::EvaluatorBackend(o.gpus.front(), cache, o.warm).unavailable();

  if (o.unavailable.empty())
    o.prebuilder = make_prebuilder(a.build_jobs, "", o.gpus.front(), static_cast<int>(o.gpus.size()), cache);
  serve::Service service(o, judge::evaluator_backends(cache, o.warm));
  const int port = service.bind();
  std::string gpu_text;
  for (int g : o.gpus) gpu_text += fmt::format("{}{}", gpu_text.empty() ? "" : ",", g);
  fmt::print(
      "kagent serve: listening on http://{}:{} (GPUs {}, queue {} / {:g} MiB, batches up to {}, {} warm problem(s) per "
      "GPU within {:g} of memory and {} spare server(s), {} build thread(s), preset {}, torch ops {}, problems under "
      "{}, baselines {}{})\n",
      o.host, port, gpu_text.empty() ? "none" : gpu_text, o.queue_capacity, a.queue_mb, o.limits.max_batch,
      o.warm.max_problems, o.warm.memory_share, o.warm.spares, o.prebuilder ? o.prebuilder->threads() : 0,
      o.limits.default_preset, torch_ops_name(o.limits.default_torch_ops), o.problems_root.string(),
      o.limits.baselines ? fmt::format("from {} ({} entries)", o.limits.baselines->path().string(),
                                       o.limits.baselines->entries().size())
                         : std::string("measured on each GPU"),
      o.token.empty() ? "" : ", bearer token required");
  if (!o.unavailable.empty()) fmt::print("kagent serve: answering 503: {}\n", o.unavailable);
  std::fflush(stdout);

  g_serve_stop.store(false);
  auto prev_int = std::signal(SIGINT, on_serve_signal);
  auto prev_term = std::signal(SIGTERM, on_serve_signal);  // Kubernetes and Slurm stop with SIGTERM
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load() && !g_serve_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    service.stop();
  });
  service.run();
  done.store(true);
  watcher.join();
  std::signal(SIGINT, prev_int);
  std::signal(SIGTERM, prev_term);
  fmt::print(stderr, "kagent serve: stopped\n");
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Evaluate candidates over HTTP (JSON): one worker per GPU, a bounded queue, health and metrics");
  set_examples(sub,
               {
                   {"kagent serve --problems-root $KAGENT_KERNELBENCH_DIR --gpus 0,1",
                    "the reward service on 127.0.0.1:8080, one worker per GPU"},
                   {"KAGENT_TOKEN=secret kagent serve --problems-root problems --host 0.0.0.0 --token-env KAGENT_TOKEN",
                    "reachable from other machines, every request needing the bearer token"},
               });
  sub->add_option("--problems-root", a->problems_root,
                  "Folder of the problems requests may name (KernelBench levels, op.json folders)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--host", a->host, "Address to bind (default 127.0.0.1; any other needs --token-env)");
  sub->add_option("--port", a->port, "Port (default 8080; 0: any free port, printed)")->check(CLI::Range(0, 65535));
  sub->add_option("--token-env", a->token_env,
                  "Environment variable holding the bearer token clients must send (required off 127.0.0.1)");
  sub->add_option("--gpus", a->gpus, "GPU indices, e.g. 0,1 (default: all): a worker each");
  sub->add_option("--queue", a->queue, "Evaluations waiting at most; beyond, 429 with Retry-After (default 4096)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--queue-mb", a->queue_mb,
                  "MiB of candidate sources waiting at most; beyond, 429 with Retry-After (default 512)")
      ->check(CLI::Range(1.0, 65536.0));
  sub->add_option("--warm-problems", a->warm_problems,
                  "Problems each GPU's worker keeps warm (their reference servers, baselines) (default 16)")
      ->check(CLI::Range(1, 256));
  sub->add_option("--warm-memory", a->warm_memory,
                  "Share of the GPU's memory (and the host's) the idle warm problems may hold (default 0.5)")
      ->check(CLI::Range(0.05, 0.95));
  sub->add_option("--spare-servers", a->spare_servers,
                  "Reference servers each GPU's worker keeps started ahead of any problem once it has seen two, so a "
                  "new problem's start skips Python, torch, the CUDA context and the libraries' first kernels "
                  "(default 1; 0: none)")
      ->check(CLI::Range(0, 8));
  sub->add_option("--preset", a->preset,
                  fmt::format("The measurement preset of requests whose \"measure\" names none: {} (default: default)",
                              measure_preset_names()));
  sub->add_option("--torch-ops", a->torch_ops,
                  fmt::format("What ModelNew solutions whose work PyTorch's operators do earn when a request's "
                              "\"measure\" does not say ({}; `kagent eval --torch-ops`) (default: fail)",
                              kTorchOpsChoices));
  sub->add_option("--baselines", a->baselines,
                  "PyTorch references: score every request against the eager and torch.compile times in this file "
                  "(or the *.json files of this folder) that `kagent ref --export-baselines` wrote, so every node of a "
                  "cluster scores alike; a problem without an entry for this GPU model and torch version is refused");
  sub->add_option("--build-jobs", a->build_jobs,
                  "Threads that compile and build queued candidates while the GPUs measure (default: the machine's "
                  "cores less two per GPU; 0: each in its worker's turn)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--max-body-mb", a->max_body_mb, "Largest request body, MiB; beyond, 413 (default 64)")
      ->check(CLI::Range(0.001, 1024.0));
  sub->add_option("--max-source-mb", a->max_source_mb, "Largest candidate source, MiB; beyond, 413 (default 1)")
      ->check(CLI::Range(0.001, 64.0));
  sub->add_option("--max-batch", a->max_batch, "Most requests in one batch (default 1024)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--timeout", a->timeout_s,
                  "Seconds: a request's limit for the GPU part when it gives no timeout_s (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
  sub->add_option("--max-timeout", a->max_timeout_s, "The largest timeout_s a request may ask for (default 600)")
      ->check(CLI::Range(1.0, 86400.0));
  sub->add_option("--queue-timeout", a->queue_timeout_s,
                  "Seconds a request may wait for a GPU worker; longer: 504, not evaluated (default 600)")
      ->check(CLI::Range(0.001, 86400.0));
  // The agent's episodes as sessions (docs/environment.md).
  sub->add_option("--max-sessions", a->max_sessions,
                  fmt::format("Agent sessions open at once; beyond, 429 (default {})", a->max_sessions))
      ->check(CLI::Range(1, 100000));
  sub->add_option("--sessions-dir", a->sessions_dir,
                  "Keep each session's transcript, candidates, best candidate and summary here (default: a temporary "
                  "folder, removed with each session)");
  sub->add_option("--session-idle", a->session_idle_s,
                  fmt::format("Seconds a session may go without a request before it is closed (default {:g})",
                              a->session_idle_s))
      ->check(CLI::Range(1.0, 7 * 86400.0));
  sub->add_option("--session-steps", a->session_steps,
                  fmt::format("The most steps (replies) a session may ask for; its default is {}", a->session_steps))
      ->check(CLI::Range(1, 100000));
  sub->add_flag("--no-shell", a->no_shell, "No session gets the shell tool");
  // The HTTP layer's bounds: what a client may make the service hold before and while it is served.
  sub->add_option(
         "--max-header-kb", a->max_header_kb,
         fmt::format("Largest request header (line and fields), KiB; beyond, 431 (default {:g})", a->max_header_kb))
      ->check(CLI::Range(1.0, 1024.0));
  sub->add_option("--header-timeout", a->header_timeout_s,
                  fmt::format("Seconds from a request's first byte to its header's end (and from a connection's start "
                              "to its first byte); longer: closed (default {:g})",
                              a->header_timeout_s))
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_option("--body-timeout", a->body_timeout_s,
                  fmt::format("Seconds for a request's body, and for writing an answer; longer: closed (default {:g})",
                              a->body_timeout_s))
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_option(
         "--idle-timeout", a->idle_timeout_s,
         fmt::format("Seconds a kept-alive connection may wait for its next request (default {:g})", a->idle_timeout_s))
      ->check(CLI::Range(0.1, 86400.0));
  sub->add_option("--max-connections", a->http.max_connections,
                  fmt::format("Connections open at most; beyond, a new one is closed at once (default {})",
                              a->http.max_connections))
      ->check(CLI::Range(1, 1000000));
  sub->add_option(
         "--max-client-connections", a->http.max_connections_per_client,
         fmt::format("Connections open at most from one address (default {})", a->http.max_connections_per_client))
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--backlog", a->http.backlog,
                  fmt::format("Connections the kernel queues before they are accepted (default {})", a->http.backlog))
      ->check(CLI::Range(16, 65535));
  sub->add_option("--http-threads", a->http.io_threads,
                  fmt::format("Threads of the HTTP layer's event loop (default {}): connections, idle or waiting, "
                              "hold none",
                              a->http.io_threads))
      ->check(CLI::Range(1, 64));
  return {sub, [a]() { return run_serve(*a); }};
}

}  // namespace kagent::cli
