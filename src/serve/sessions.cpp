// The session table of `kagent serve` (sessions.hpp): each session an episode with its own
// workspace, tools and transcript; the table's lock guards only the map, each session's its state.
#include "kagent/serve/sessions.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/agent/episode.hpp"
#include "kagent/agent/nudges.hpp"
#include "kagent/agent/run_record.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/default_arch.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/report_score.hpp"
#include "kagent/model_tools/tool_call.hpp"
#include "kagent/serve/problem_path.hpp"
#include "kagent/spec/precision_option.hpp"

namespace kagent::serve {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// 128 random bits as hex: a session id a client cannot guess.
std::string new_session_id() {
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", rd());
  return id;
}

Answer error_answer(int status, const std::string& message, const std::string& field = "") {
  return answer_of(status, error_body(status, message, field));
}

// Bytes of the regular files under `root` (symlinks not followed).
size_t tree_bytes(const fs::path& root) {
  size_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += static_cast<size_t>(it->file_size(ec));
  return total;
}

Json tool_schemas(const model_tools::ToolSet& tools) {
  Json out = Json::array();
  for (const auto& t : tools) {
    const llm::ToolSpec s = t->spec();
    out.push_back({{"type", "function"},
                   {"function", {{"name", s.name}, {"description", s.description}, {"parameters", s.parameters}}}});
  }
  return out;
}

Json limits_json(const SessionLimits& l) {
  return {{"steps", l.steps},
          {"wall_s", l.wall_s},
          {"call_s", l.call_s},
          {"observation_bytes", l.observation_bytes},
          {"evaluations", l.evaluations},
          {"workspace_mb", l.workspace_bytes >> 20}};
}

}  // namespace

// One episode. `mu` guards the state below it; a step holds `busy` (not the lock) while it runs.
struct Session {
  std::string id;
  fs::path dir;
  OpenSessionRequest request;
  fs::path problem_file;
  Op op;
  Clock::time_point opened;
  std::unique_ptr<model_tools::Workspace> ws;
  std::unique_ptr<Compiler> compiler;
  model_tools::KernelToolContext ktx;
  agent::EpisodeTools tools;
  std::unique_ptr<agent::Transcript> transcript;
  std::unique_ptr<agent::RunRecord> record;

  std::mutex mu;
  std::condition_variable idle_cv;  // a step ended
  Clock::time_point last_request;
  bool busy = false, done = false, closed = false;
  std::string done_reason;
  std::atomic<int> steps{0}, evaluations{0};  // changed by the step in flight, read by state()
  std::optional<double> reward;
  std::string reward_note;  // why there is no reward, or where it came from
  Json final_verdict;       // finish's evaluation's record (null: none)
  std::optional<int> best_tier;
};

struct Sessions::Impl {
  SessionOptions opt;
  RequestLimits limits;
  fs::path problems_root;
  EvalQueue* queue;
  std::string no_gpu;
  int gpu;
  fs::path root;
  bool temporary_root = false;
  std::optional<model_tools::ShellSandbox> sandbox;  // probed once
  std::shared_ptr<CompileCache> cache;
  std::string arch;
  // Facts per problem and precision (a PyTorch problem resolved, its baselines timed), made once.
  std::mutex facts_mu;
  std::map<std::string, std::shared_future<std::shared_ptr<const agent::ProblemFacts>>> facts;

  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> open;
  std::map<std::string, Json> closed;  // their summaries, for an idempotent close
  std::deque<std::string> closed_order;
  size_t opening = 0;  // admitted, still being made

  // Reaps idle sessions every quarter of the idle time (at most a minute apart).
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  bool stopping = false;
  std::thread reaper;

  Impl(SessionOptions o, RequestLimits l, fs::path pr, EvalQueue* q, std::string ng, int g)
      : opt(std::move(o)), limits(std::move(l)), problems_root(std::move(pr)), queue(q), no_gpu(std::move(ng)), gpu(g) {
    if (opt.dir.empty()) {
      root = fs::temp_directory_path() / fmt::format("kagent-sessions-{}-{}", getpid(), new_session_id().substr(0, 8));
      temporary_root = true;
    } else {
      root = opt.dir;
    }
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) throw EnvError(fmt::format("--sessions-dir {}: cannot create it: {}", root.string(), ec.message()));
    if (opt.shell) sandbox = model_tools::probe_shell_sandbox();
    cache = std::make_shared<CompileCache>(CompileCache::default_dir());
    arch = kNoGpuArch;
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(reaper_mu);
      stopping = true;
    }
    reaper_cv.notify_all();
    if (reaper.joinable()) reaper.join();
    std::vector<std::shared_ptr<Session>> all;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [id, s] : open) all.push_back(s);
    }
    for (auto& s : all) finish_close(*s, "the service stopped");
    if (temporary_root) {
      std::error_code ec;
      fs::remove_all(root, ec);
    }
  }

  std::shared_ptr<Session> find(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = open.find(id);
    return it == open.end() ? nullptr : it->second;
  }

  // The op's facts for the task text: from a worker's Evaluator through the queue (it needs the
  // GPU), else the machine's reason for having none.
  // Sessions of one problem opened together wait for one resolution: the first asks the queue, the
  // others wait for its answer; a failure is not kept (the next opening of that problem asks again).
  std::shared_ptr<const agent::ProblemFacts> facts_of(const Session& s) {
    if (!queue) return std::make_shared<const agent::ProblemFacts>(agent::facts_without_gpu(s.op, no_gpu));
    const std::string key = fmt::format("{}\n{}\n{:g}\n{:g}", judge::problem_key(s.problem_file),
                                        precision_name(s.op.precision), s.op.tolerance.atol, s.op.tolerance.rtol);
    std::promise<std::shared_ptr<const agent::ProblemFacts>> promise;
    std::shared_future<std::shared_ptr<const agent::ProblemFacts>> pending;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(facts_mu);
      auto it = facts.find(key);
      if (it == facts.end()) {
        it = facts.emplace(key, promise.get_future().share()).first;
        mine = true;
      }
      pending = it->second;
    }
    if (!mine) return pending.get();  // rethrows the first one's failure
    try {
      auto made = resolve(s);
      promise.set_value(made);
      return made;
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard<std::mutex> lock(facts_mu);
      facts.erase(key);
      throw;
    }
  }

  // The problem resolved and its baselines timed by a GPU worker's Evaluator, in turn with the
  // evaluations.
  std::shared_ptr<const agent::ProblemFacts> resolve(const Session& s) {
    auto made = std::make_shared<agent::ProblemFacts>();
    judge::CandidateRequest r = s.request.judging;
    r.problem = s.problem_file;
    const Op op = s.op;
    const int text_gpu = gpu;
    EvalQueue::Refusal why = EvalQueue::Refusal::none;
    auto future = queue->run_task(
        r,
        [r, op, made, text_gpu](judge::EvalBackend& backend) {
          Evaluator* ev = backend.evaluator_for_request(r);
          if (ev == nullptr) {  // a backend of records alone (a test's): nothing measured for the task
            *made = agent::facts_without_gpu(op, "this evaluation backend measures no baselines");
            return Json::object();
          }
          *made = agent::problem_facts(*ev, op, text_gpu, true);
          return Json{{"arch", ev->arch()}};
        },
        &why);
    if (!future) throw EnvError("the evaluation queue is full or stopping: try again later");
    Answer a = future->get();
    const std::string message = a.body.contains("error") ? a.body["error"].value("message", "") : "";
    if (a.status == 422) throw InputError(message);
    if (a.status != 200) throw EnvError(message.empty() ? "the problem could not be resolved" : message);
    std::lock_guard<std::mutex> lock(facts_mu);
    arch = a.body.value("arch", arch);
    return made;
  }

  // An evaluation of the session's candidate through the GPU queue, waited for until the call's deadline.
  EvalReport evaluate(Session& s, const Candidate& c, EvalMode mode, std::optional<model_tools::Deadline> deadline) {
    judge::CandidateRequest r = s.request.judging;
    r.problem = s.problem_file;
    r.source = c.source;
    r.kind = kind_of(c).name();
    r.name = c.path.filename().string();
    r.want_report = true;
    r.mode = mode;
    // The GPU part's limit stays the session's (timeout_s): an evaluation's options are the same for
    // every call, so the worker's Evaluator serves them all; the call's deadline bounds the wait.
    EvalQueue::Refusal why = EvalQueue::Refusal::none;
    auto futures = queue->submit({r}, &why);
    if (!futures)
      throw EnvError(why == EvalQueue::Refusal::stopping ? "the service is stopping"
                                                         : "the evaluation queue is full: evaluate again later");
    std::future<Answer>& f = futures->front();
    if (deadline && f.wait_until(*deadline) != std::future_status::ready)
      throw EnvError("the episode's call time ran out while the evaluation waited for a GPU");
    Answer a = f.get();
    if (a.status == 200 && a.report) return *a.report;
    const std::string message = a.body.contains("error") ? a.body["error"].value("message", "") : a.body.dump();
    if (a.status == 422) throw InputError(message);
    throw EnvError(message);
  }

  // A session that is not open: its summary when it was closed (close and state answer the same
  // again), else 404.
  Answer not_open(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = closed.find(id); it != closed.end()) return answer_of(200, it->second);
    return error_answer(404, "no such session: " + id, "session_id");
  }

  Json summary(Session& s) {
    Json j = {{"session_id", s.id},
              {"state", s.closed ? "closed"
                        : s.done ? "done"
                        : s.busy ? "stepping"
                                 : "open"},
              {"problem", s.request.problem},
              {"done", s.done},
              {"done_reason", s.done_reason},
              {"reward", s.reward ? Json(*s.reward) : Json()},
              {"reward_rule", reward_rule_name(s.request.reward)},
              {"steps", s.steps.load()},
              {"evaluations", s.evaluations.load()},
              {"wall_s", seconds_since(s.opened)},
              {"final", s.final_verdict}};
    if (!s.reward_note.empty()) j["reward_note"] = s.reward_note;
    // A step in flight changes the best and the finished path: they are read between steps only.
    if (!s.busy) {
      j["best"] = s.record && s.record->best() ? Json(*s.record->best()) : Json();
      if (s.ktx.finished_path) j["final_path"] = *s.ktx.finished_path;
    }
    return j;
  }

  // The final candidate of a finished episode, once more by the full protocol. Runs while the
  // session is busy and its lock is free: the evaluation waits for a GPU, and nothing else may wait
  // for it.
  struct FinalVerdict {
    std::optional<Score> score;
    Json record;       // null: none
    std::string note;  // why there is none
  };
  FinalVerdict final_evaluation(Session& s, std::optional<model_tools::Deadline> deadline) {
    FinalVerdict f;
    if (!s.ktx.finished_path) return f;
    if (!s.ktx.evaluate) {
      f.note = "no GPU: " + no_gpu;
      return f;
    }
    try {
      const Candidate c = load_candidate(s.ws->resolve(*s.ktx.finished_path));
      const EvalReport rep = s.ktx.evaluate(c, EvalMode::score, deadline);
      f.score = report_score(rep);
      f.record = report_json(rep);
      f.record["candidate"] = *s.ktx.finished_path;
    } catch (const InputError& e) {
      f.score = Score{};
      f.record = {{"candidate", *s.ktx.finished_path}, {"tier", -1}, {"reason", e.what()}};
    } catch (const std::exception& e) {
      f.note = fmt::format("the final candidate could not be evaluated: {}", e.what());
    }
    return f;
  }

  // The episode's end, with s.mu held: its reward by the session's rule (from `final` when it
  // finished, else from the best candidate evaluated), the transcript's stop.
  void end_episode(Session& s, const std::string& reason, const FinalVerdict& final) {
    s.done = true;
    s.done_reason = reason;
    std::optional<Score> final_score = final.score;
    s.final_verdict = final.record;
    s.reward_note = final.note;
    if (reason != "finish" && s.record->best()) {
      final_score = s.record->best()->score;  // a limit ended it: the best evaluated candidate stands
      s.reward_note = fmt::format("no finish: the best evaluated candidate ({})", s.record->best()->path);
    }
    if (final_score) s.best_tier = std::max(s.best_tier.value_or(-1), final_score->tier);
    const bool measured = final_score.has_value() || s.ktx.evaluate;
    switch (s.request.reward) {
      case RewardRule::tier:
        if (measured) s.reward = final_score ? final_score->tier : -1;
        break;
      case RewardRule::best_tier:
        if (measured) s.reward = s.best_tier.value_or(-1);
        break;
      case RewardRule::log_speedup:
        if (measured)
          s.reward = final_score && final_score->correct() && final_score->speedup_vs_eager &&
                             *final_score->speedup_vs_eager > 0
                         ? std::log(*final_score->speedup_vs_eager)
                         : -1.0;
        break;
    }
    if (!s.reward && s.reward_note.empty()) s.reward_note = "no GPU: " + no_gpu;
    s.transcript->write(agent::StopEvent{reason, s.steps.load()});
    s.transcript->write(agent::SessionEndEvent{seconds_since(s.opened)});
  }

  // Closes a session (a client's close, the reaper, the service's stop): waits for a step in
  // flight, ends the episode if it still runs, keeps its summary and removes its workspace.
  Json finish_close(Session& s, const std::string& why) {
    Json summary_json;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.closed = true;
      s.idle_cv.wait(lock, [&] { return !s.busy; });
      if (!s.done) end_episode(s, why, FinalVerdict{});
      summary_json = summary(s);
    }
    std::error_code ec;
    fs::remove_all(s.dir / "workspace", ec);
    write_file_atomic(s.dir / "summary.json", summary_json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
    if (temporary_root) fs::remove_all(s.dir, ec);
    std::lock_guard<std::mutex> lock(mu);
    open.erase(s.id);
    closed[s.id] = summary_json;
    closed_order.push_back(s.id);
    while (closed_order.size() > 4096) {
      closed.erase(closed_order.front());
      closed_order.pop_front();
    }
    return summary_json;
  }
};

Sessions::Sessions(SessionOptions options, RequestLimits limits, fs::path problems_root, EvalQueue* queue,
                   std::string no_gpu, int gpu)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(limits), std::move(problems_root), queue,
                                   std::move(no_gpu), gpu)) {
  Impl& m = *impl_;
  if (m.opt.idle_s <= 0) return;
  const auto every = std::chrono::milliseconds(static_cast<int64_t>(std::min(60.0, m.opt.idle_s / 4) * 1000) + 1);
  m.reaper = std::thread([this, &m, every] {
    std::unique_lock<std::mutex> lock(m.reaper_mu);
    while (!m.reaper_cv.wait_for(lock, every, [&] { return m.stopping; })) {
      lock.unlock();
      if (const size_t n = reap()) spdlog::info("reaped {} idle session(s)", n);
      lock.lock();
    }
  });
}

Sessions::~Sessions() = default;

const fs::path& Sessions::root() const {
  return impl_->root;
}

size_t Sessions::open_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->open.size();
}

Answer Sessions::open(std::string_view body) {
  Impl& m = *impl_;
  OpenSessionRequest req;
  fs::path problem;
  try {
    req = parse_open_session(body, m.limits, m.opt.most);
    problem = resolve_problem(m.problems_root, req.problem);
  } catch (const RequestError& e) {
    return error_answer(e.status(), e.what(), e.field());
  }
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.open.size() + m.opening >= m.opt.max_sessions)
      return answer_of(
          429,
          error_body(429, fmt::format("{} sessions are open, the service's --max-sessions: close one or try later",
                                      m.opt.max_sessions)),
          10);
    ++m.opening;
  }
  struct Admitted {
    Impl& m;
    ~Admitted() {
      std::lock_guard<std::mutex> lock(m.mu);
      --m.opening;
    }
  } admitted{m};
  auto s = std::make_shared<Session>();
  s->id = new_session_id();
  s->dir = m.root / s->id;
  s->request = req;
  s->problem_file = problem;
  s->opened = s->last_request = Clock::now();
  try {
    s->op = load_op(problem);
    if (req.judging.precision) s->op = with_precision(std::move(s->op), *req.judging.precision);
    req.judging.overrides.apply(s->op);
  } catch (const InputError& e) {
    return error_answer(422, e.what(), "problem");
  }
  std::shared_ptr<const agent::ProblemFacts> facts;
  try {
    facts = m.facts_of(*s);
  } catch (const InputError& e) {
    return error_answer(422, e.what(), "problem");
  } catch (const std::exception& e) {
    return error_answer(503, e.what());
  }
  try {
    fs::create_directories(s->dir);
    s->ws = std::make_unique<model_tools::Workspace>(s->dir / "workspace");
    if (s->op.start) write_file_atomic(s->ws->root() / s->op.start->filename(), read_text_file(*s->op.start));
    s->compiler = std::make_unique<Compiler>(find_cuda_paths(), m.cache);
    s->ktx.op = facts->with_signature;
    s->ktx.compiler = s->compiler.get();
    s->ktx.kind = req.kind;
    {
      std::lock_guard<std::mutex> lock(m.facts_mu);
      s->ktx.arch = m.arch;
    }
    if (m.queue) {
      Session* raw = s.get();
      s->ktx.evaluate = [&m, raw](const Candidate& c, EvalMode mode, std::optional<model_tools::Deadline> d) {
        return m.evaluate(*raw, c, mode, d);
      };
    } else {
      s->ktx.no_gpu_reason = m.no_gpu;
    }
    const bool shell = req.shell && m.sandbox.has_value();
    s->tools = agent::make_episode_tools(*s->ws, s->ktx, shell ? m.sandbox : std::nullopt);
    if (!req.shell) s->tools.shell_note = "shell is off (the episode was opened with \"shell\": false)";
    s->transcript = std::make_unique<agent::Transcript>(s->dir / "transcript.jsonl");
    s->record = std::make_unique<agent::RunRecord>(s->dir, *s->transcript);
    Session* raw = s.get();
    s->ktx.on_evaluated = [raw](const std::string& path, const std::string& source, const EvalReport& r) {
      const agent::CandidateScore score = raw->record->evaluated(path, source, r);
      raw->best_tier = std::max(raw->best_tier.value_or(-1), score.score.tier);
    };
    agent::AgentOptions budget;
    budget.max_turns = req.limits.steps;
    budget.max_minutes = req.limits.wall_s / 60;
    budget.tool_output_cap = req.limits.observation_bytes;
    const auto opening = agent::episode_opening(s->op, *facts, m.gpu, budget, s->tools, m.opt.prompts, m.opt.skills);
    s->transcript->write(agent::StartEvent{agent::kTranscriptVersion, s->op.name, "session of kagent serve",
                                           budget.max_turns, budget.max_minutes, 0,
                                           s->ktx.no_gpu_reason.empty() ? "available" : s->ktx.no_gpu_reason});
    Json messages = Json::array();
    for (const auto& msg : opening) {
      s->transcript->write(agent::MessageEvent{msg, std::nullopt, std::nullopt});
      messages.push_back({{"role", std::string(llm::role_name(msg.role))}, {"content", msg.content}});
    }
    Json body = {{"session_id", s->id},
                 {"messages", messages},
                 {"tools", tool_schemas(s->tools.tools)},
                 {"limits", limits_json(req.limits)},
                 {"reward", reward_rule_name(req.reward)},
                 {"kind", req.kind.empty() ? Json() : Json(req.kind)},
                 {"problem", req.problem}};
    std::lock_guard<std::mutex> lock(m.mu);
    m.open[s->id] = s;
    return answer_of(200, std::move(body), 0);
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove_all(s->dir, ec);
    spdlog::error("session for {} not opened: {}", req.problem, e.what());
    return error_answer(500, fmt::format("the session could not be made: {}", e.what()));
  }
}

Answer Sessions::step(const std::string& id, std::string_view body) {
  Impl& m = *impl_;
  std::shared_ptr<Session> sp = m.find(id);
  if (!sp) {
    std::lock_guard<std::mutex> lock(m.mu);
    return error_answer(m.closed.count(id) ? 409 : 404,
                        m.closed.count(id) ? "that session is closed" : "no such session: " + id, "session_id");
  }
  Session& s = *sp;
  StepRequest req;
  try {
    req = parse_step(body, m.limits);
  } catch (const RequestError& e) {
    return error_answer(e.status(), e.what(), e.field());
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.last_request = Clock::now();
    if (s.closed) return error_answer(409, "that session is closed", "session_id");
    if (s.busy) return error_answer(409, "a step of this episode is still running: one step at a time", "session_id");
    if (s.done) return error_answer(409, fmt::format("the episode is over ({}): close the session", s.done_reason));
    s.busy = true;
  }
  struct Release {
    Session& s;
    ~Release() {
      std::lock_guard<std::mutex> lock(s.mu);
      s.busy = false;
      s.last_request = Clock::now();
      s.idle_cv.notify_all();
    }
  } release{s};

  // The assistant's reply as the transcript of `kagent optimize` keeps it.
  llm::Message reply;
  reply.role = llm::Role::assistant;
  reply.content = req.text;
  reply.tool_calls = req.calls;
  s.transcript->write(agent::MessageEvent{reply, std::nullopt, std::nullopt});
  s.steps += 1;
  s.record->set_turn(s.steps.load());
  const auto wall_end = s.opened + std::chrono::milliseconds(static_cast<int64_t>(s.request.limits.wall_s * 1000));

  Json observations = Json::array();
  bool finished = false;
  for (size_t i = 0; i < req.calls.size(); ++i) {
    const llm::ToolCall& call = req.calls[i];
    model_tools::CallOutcome o;
    std::optional<Clock::time_point> call_start;  // set when the call runs
    const bool evaluates = call.name == "evaluate" || call.name == "profile";
    const auto deadline = std::min(
        wall_end, Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s.request.limits.call_s * 1000)));
    if (i >= kMaxStepCalls || finished) {
      o.message.role = llm::Role::tool;
      o.message.tool_call_id = call.id;
      o.message.tool_name = call.name;
      o.message.is_error = true;
      o.message.content =
          finished ? "error: not run: finish ended the episode before this call"
                   : fmt::format(
                         "error: not run: this reply made {} tool calls and kagent runs only the first {} of a "
                         "reply; make this call again in a later turn if it is still needed",
                         req.calls.size(), kMaxStepCalls);
    } else if (evaluates && s.evaluations >= s.request.limits.evaluations) {
      o.message.role = llm::Role::tool;
      o.message.tool_call_id = call.id;
      o.message.tool_name = call.name;
      o.message.is_error = true;
      o.message.content = fmt::format(
          "error: not run: this episode's {} evaluations (evaluate and profile) are spent; finish with your best "
          "candidate",
          s.request.limits.evaluations);
    } else {
      try {
        call_start = Clock::now();
        o = model_tools::run_tool_call(s.tools.tools, call, deadline, s.request.limits.observation_bytes);
      } catch (const std::exception& e) {
        // kagent's own failure (no GPU worker answered, the queue full): the model reads it.
        o.message.role = llm::Role::tool;
        o.message.tool_call_id = call.id;
        o.message.tool_name = call.name;
        o.message.is_error = true;
        o.message.content = fmt::format("error: kagent could not run this {} call: {}", call.name, e.what());
      }
      if (evaluates && !o.malformed) s.evaluations += 1;
      finished = o.finished;
    }
    s.transcript->write(agent::MessageEvent{o.message, std::nullopt, agent::ToolResultFacts{o.record, o.malformed}});
    observations.push_back({{"tool_call_id", o.message.tool_call_id},
                            {"name", call.name},
                            {"content", o.message.content},
                            {"is_error", o.message.is_error},
                            {"truncated", o.truncated},
                            {"seconds", call_start ? seconds_since(*call_start) : 0.0}});
  }
  // A reply that did no work gets the words the agent loop gives its model.
  std::string feedback;
  if (req.calls.empty()) {
    if (!req.unreadable.empty())
      feedback = agent::unreadable_calls_nudge(req.unreadable);
    else
      feedback = agent::text_only_nudge();
    llm::Message nudge;
    nudge.role = llm::Role::user;
    nudge.content = feedback;
    s.transcript->write(agent::MessageEvent{nudge, std::nullopt, std::nullopt});
  }

  // Whether the episode ends here, and why; finish's evaluation before the lock is taken.
  std::string end_reason = finished                                                      ? "finish"
                           : s.steps >= s.request.limits.steps                           ? "step limit"
                           : Clock::now() >= wall_end                                    ? "time limit"
                           : tree_bytes(s.ws->root()) > s.request.limits.workspace_bytes ? "workspace limit"
                                                                                         : "";
  const Impl::FinalVerdict final = finished ? m.final_evaluation(s, wall_end) : Impl::FinalVerdict{};
  std::lock_guard<std::mutex> lock(s.mu);
  if (!end_reason.empty()) m.end_episode(s, end_reason, final);
  Json out = {{"observations", observations},
              {"done", s.done},
              {"done_reason", s.done ? Json(s.done_reason) : Json()},
              {"reward", s.reward ? Json(*s.reward) : Json()},
              {"steps", s.steps.load()},
              {"evaluations", s.evaluations.load()}};
  if (!feedback.empty()) out["feedback"] = feedback;
  if (s.done) {
    out["final"] = s.final_verdict;
    out["best"] = s.record->best() ? Json(*s.record->best()) : Json();
    if (!s.reward_note.empty()) out["reward_note"] = s.reward_note;
  }
  return answer_of(200, std::move(out), 0);
}

Answer Sessions::close(const std::string& id) {
  Impl& m = *impl_;
  std::shared_ptr<Session> s = m.find(id);
  if (!s) return m.not_open(id);
  return answer_of(200, m.finish_close(*s, "closed"), 0);
}

Answer Sessions::state(const std::string& id) {
  Impl& m = *impl_;
  std::shared_ptr<Session> s = m.find(id);
  if (!s) return m.not_open(id);
  std::lock_guard<std::mutex> lock(s->mu);
  return answer_of(200, m.summary(*s), 0);
}

size_t Sessions::reap() {
  Impl& m = *impl_;
  std::vector<std::shared_ptr<Session>> all, idle;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    for (auto& [id, s] : m.open) all.push_back(s);
  }
  for (auto& s : all) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->busy && !s->closed && seconds_since(s->last_request) > m.opt.idle_s) idle.push_back(s);
  }
  for (auto& s : idle) m.finish_close(*s, "reaped: idle");
  return idle.size();
}

}  // namespace kagent::serve
