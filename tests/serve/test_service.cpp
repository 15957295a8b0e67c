// kagent serve's HTTP side in this process, with a fake backend (no GPU): records come back as the
// backend wrote them, a full queue answers 429 with Retry-After, bodies over the limit 413, the
// bearer token is required when set, /metrics is Prometheus text, a service without a GPU answers
// 503 naming why, and a failing evaluation costs only its own request.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <future>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "service_fixture.hpp"

using namespace kagent;
using namespace kagent::serve;

namespace {

class ServeTest : public test::ServiceFixture {
 protected:
  httplib::Client client(const std::string& token = "") {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    if (!token.empty()) c.set_bearer_token_auth(token.c_str());
    return c;
  }
  static std::string body(const std::string& source, const std::string& extra = "") {
    nlohmann::json j = {{"source", source}, {"kind", "plan"}, {"problem", "level1/19"}};
    if (!extra.empty()) j.update(nlohmann::json::parse(extra));
    return j.dump();
  }
  static nlohmann::json json_of(const httplib::Result& r) { return nlohmann::json::parse(r->body); }
};

}  // namespace

TEST_F(ServeTest, EvaluatesAndAnswersTheRecord) {
  start();
  auto c = client();
  auto r =
      c.Post("/v1/evaluate", body("tier 2 speedup 1.5", R"({"name": "s1.cu", "tolerance": 0.01})"), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  auto j = json_of(r);
  EXPECT_EQ(j["tier"], 2);
  EXPECT_EQ(j["candidate"], "s1.cu");
  EXPECT_EQ(j["op"], "19_ReLU.py");  // the problem resolved under the root
  // How the service ran it: the GPU, the seconds queued and evaluated, the problem cold (the first).
  EXPECT_EQ(j["serve"]["gpu"], 0);
  EXPECT_GE(j["serve"]["queued_s"].get<double>(), 0.0);
  EXPECT_GE(j["serve"]["evaluated_s"].get<double>(), 0.0);
  EXPECT_EQ(j["serve"]["problem"], "cold");

  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto hj = json_of(h);
  EXPECT_EQ(hj["status"], "ok");
  EXPECT_EQ(hj["queue_capacity"], 4096);
  EXPECT_EQ(hj["warm"]["limit"], 16);  // what the backends were told (the fake says nothing)
  EXPECT_EQ(hj["warm"]["memory_share"], 0.5);
  EXPECT_EQ(hj["warm"]["gpus"]["0"]["problems"], 0);

  // A batch: a record per request, in order; a failing candidate is its own record.
  auto b = c.Post(
      "/v1/evaluate_batch",
      "{\"requests\": [" + body("tier 3 speedup 2") + "," + body("compile_error") + "," + body("throw input") + "]}",
      "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 200) << b->body;
  auto results = json_of(b)["results"];
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0]["tier"], 3);
  EXPECT_EQ(results[1]["tier"], -1);
  EXPECT_EQ(results[2]["error"]["status"], 422);
  // The same problem again on the same worker: warm.
  EXPECT_EQ(results[0]["serve"]["problem"], "warm");
}

TEST_F(ServeTest, BadRequestsAre4xxNamingTheField) {
  start();
  auto c = client();
  auto field_of = [&](const httplib::Result& r) { return json_of(r)["error"].value("field", ""); };
  auto bad = c.Post("/v1/evaluate", "{\"source\": ", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(field_of(bad), "body");
  auto unknown = c.Post("/v1/evaluate", body("x", R"({"tolerence": 1})"), "application/json");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_EQ(field_of(unknown), "tolerence");
  auto type = c.Post("/v1/evaluate", body("x", R"({"trials": "3"})"), "application/json");
  EXPECT_EQ(type->status, 400);
  EXPECT_EQ(field_of(type), "trials");
  auto traversal = c.Post("/v1/evaluate", body("x", R"({"problem": "../../etc/passwd"})"), "application/json");
  EXPECT_EQ(traversal->status, 400);
  EXPECT_EQ(field_of(traversal), "problem");
  auto batch = c.Post("/v1/evaluate_batch", "{\"requests\": [" + body("x", R"({"problem": "/etc/passwd"})") + "]}",
                      "application/json");
  EXPECT_EQ(batch->status, 400);
  EXPECT_EQ(field_of(batch), "requests[0].problem");
  auto missing = c.Post("/v1/evaluate", body("x", R"({"problem": "level1/7"})"), "application/json");
  EXPECT_EQ(missing->status, 404);
  auto nowhere = c.Get("/v2/nothing");
  EXPECT_EQ(nowhere->status, 404);
  EXPECT_EQ(field_of(nowhere), "path");
  EXPECT_EQ(state.calls.load(), 0);  // none reached the backend
}

TEST_F(ServeTest, HugeBodyIs413) {
  ServeOptions o;
  o.limits.max_body_bytes = 4096;
  start(o);
  auto c = client();
  auto r = c.Post("/v1/evaluate", std::string(100000, ' '), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(json_of(r)["error"]["field"], "body");
  // The service goes on.
  EXPECT_EQ(c.Post("/v1/evaluate", body("tier 1"), "application/json")->status, 200);
}

TEST_F(ServeTest, FullQueueAnswers429WithRetryAfter) {
  ServeOptions o;
  o.queue_capacity = 1;
  start(o);
  // One evaluation holds the only worker, one waits in the queue: the third is refused at once.
  auto first =
      std::async(std::launch::async, [&] { return client().Post("/v1/evaluate", body("block"), "application/json"); });
  ASSERT_TRUE(state.wait_blocked(1));
  auto second =
      std::async(std::launch::async, [&] { return client().Post("/v1/evaluate", body("tier 1"), "application/json"); });
  // The second is admitted once the queue shows it.
  for (int i = 0; i < 200; ++i) {
    auto m = client().Get("/metrics");
    if (m && m->body.find("kagent_queue_depth 1\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  auto third = client().Post("/v1/evaluate", body("tier 1"), "application/json");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 429) << third->body;
  EXPECT_TRUE(third->has_header("Retry-After"));
  EXPECT_GE(std::stoi(third->get_header_value("Retry-After")), 1);
  auto batch = client().Post("/v1/evaluate_batch", "{\"requests\": [" + body("tier 1") + "]}", "application/json");
  EXPECT_EQ(batch->status, 429);
  state.release();
  EXPECT_EQ(first.get()->status, 200);
  EXPECT_EQ(second.get()->status, 200);
  // A batch larger than the queue could ever hold is refused as too large, not as busy.
  auto huge = client().Post("/v1/evaluate_batch", "{\"requests\": [" + body("tier 1") + "," + body("tier 1") + "]}",
                            "application/json");
  EXPECT_EQ(huge->status, 413);
}

// The queue is bounded in bytes of sources too (--queue-mb): 429 naming it while the sources
// waiting fill it, 413 for candidates it could never hold. A batch in flight shows in /metrics.
TEST_F(ServeTest, TheQueueIsBoundedInBytesOfSources) {
  ServeOptions o;
  o.queue_bytes = 1000;
  start(o);
  auto first = std::async(std::launch::async, [&] {
    return client().Post("/v1/evaluate_batch",
                         "{\"requests\": [" + body("block") + "," + body(std::string(600, 'x')) + "]}",
                         "application/json");
  });
  ASSERT_TRUE(state.wait_blocked(1));
  // One evaluates ("block"), 600 bytes wait: 600 more do not fit.
  auto m = client().Get("/metrics");
  ASSERT_TRUE(m);
  for (const char* line : {"kagent_batches_in_flight 1\n", "kagent_batch_requests{state=\"queued\"} 1\n",
                           "kagent_batch_requests{state=\"running\"} 1\n", "kagent_queue_bytes 600\n"})
    EXPECT_NE(m->body.find(line), std::string::npos) << line << m->body;
  auto full = client().Post("/v1/evaluate", body(std::string(600, 'y')), "application/json");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  EXPECT_TRUE(full->has_header("Retry-After"));
  EXPECT_NE(json_of(full)["error"]["message"].get<std::string>().find("--queue-mb"), std::string::npos) << full->body;
  // More than the queue could ever hold: too large, not busy.
  auto huge = client().Post("/v1/evaluate", body(std::string(1200, 'z')), "application/json");
  EXPECT_EQ(huge->status, 413) << huge->body;
  EXPECT_EQ(json_of(huge)["error"]["field"], "source");
  state.release();
  auto r = first.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json_of(r)["results"].size(), 2u);
  EXPECT_EQ(client().Post("/v1/evaluate", body(std::string(600, 'y')), "application/json")->status, 200);
}

TEST_F(ServeTest, BearerTokenRequiredWhenSet) {
  ServeOptions o;
  o.token = "s3cret-token";
  start(o);
  auto none = client().Post("/v1/evaluate", body("tier 1"), "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(json_of(none)["error"]["field"], "Authorization");
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(client("s3cret-tokex").Post("/v1/evaluate", body("tier 1"), "application/json")->status, 401);
  EXPECT_EQ(client("s3cret-token").Post("/v1/evaluate", body("tier 1"), "application/json")->status, 200);
  EXPECT_EQ(client().Get("/metrics")->status, 401);
  EXPECT_EQ(client("s3cret-token").Get("/metrics")->status, 200);
  EXPECT_EQ(client().Get("/health")->status, 200);  // probes carry no token
  // A body without the token is refused before it is read or parsed.
  EXPECT_EQ(client().Post("/v1/evaluate", std::string(64 << 10, ' '), "application/json")->status, 401);
  EXPECT_EQ(state.calls.load(), 1);
}

TEST_F(ServeTest, WithoutAGpuAnswers503NamingWhy) {
  ServeOptions o;
  o.unavailable = "no GPU to evaluate on: no CUDA device";
  start(o);
  auto c = client();
  auto h = c.Get("/health");
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(json_of(h)["reason"], o.unavailable);
  auto r = c.Post("/v1/evaluate", body("tier 1"), "application/json");
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json_of(r)["error"]["message"], o.unavailable);
  // A bad request is still said to be bad.
  EXPECT_EQ(c.Post("/v1/evaluate", body("x", R"({"kind": "cuda"})"), "application/json")->status, 400);
  EXPECT_NE(c.Get("/metrics")->body.find("kagent_up 0\n"), std::string::npos);
  EXPECT_EQ(state.made.load(), 0);
}

TEST_F(ServeTest, AFailingEvaluationCostsOnlyItsRequest) {
  start();
  auto c = client();
  auto env = c.Post("/v1/evaluate", body("throw env"), "application/json");
  EXPECT_EQ(env->status, 503);
  EXPECT_NE(json_of(env)["error"]["message"].get<std::string>().find("runner is gone"), std::string::npos);
  auto crash = c.Post("/v1/evaluate", body("crash"), "application/json");
  EXPECT_EQ(crash->status, 200);
  EXPECT_EQ(json_of(crash)["tier"], -1);
  auto next = c.Post("/v1/evaluate", body("tier 2"), "application/json");
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(json_of(next)["tier"], 2);
  EXPECT_EQ(state.made.load(), 2);  // a fresh backend after the environment failure
}

TEST_F(ServeTest, WaitingPastTheQueueTimeoutIs504) {
  ServeOptions o;
  o.queue_capacity = 4;
  o.queue_timeout_s = 0.05;
  start(o);
  auto first =
      std::async(std::launch::async, [&] { return client().Post("/v1/evaluate", body("block"), "application/json"); });
  ASSERT_TRUE(state.wait_blocked(1));
  auto late =
      std::async(std::launch::async, [&] { return client().Post("/v1/evaluate", body("tier 1"), "application/json"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  state.release();
  EXPECT_EQ(first.get()->status, 200);
  auto r = late.get();
  EXPECT_EQ(r->status, 504) << r->body;
  EXPECT_EQ(state.calls.load(), 1);  // never evaluated
}

TEST_F(ServeTest, MetricsArePrometheusText) {
  start();
  auto c = client();
  c.Post("/v1/evaluate", body("tier 2"), "application/json");
  c.Post("/v1/evaluate", body("compile_error"), "application/json");
  c.Post("/v1/evaluate", body("x", R"({"kind": 1})"), "application/json");
  // HTTP answers are counted once written (the client may ask before that): wait for the 400's.
  auto m = c.Get("/metrics");
  for (int i = 0; i < 200 && m && m->body.find("kagent_http_responses_total{code=\"400\"} 1\n") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    m = c.Get("/metrics");
  }
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  const std::string& t = m->body;
  for (const char* s : {"kagent_queue_depth 0\n",
                        "kagent_queue_capacity 4096\n",
                        "kagent_up 1\n",
                        "kagent_queue_capacity_bytes 536870912\n",
                        "kagent_queue_bytes 0\n",
                        "kagent_batches_in_flight 0\n",
                        "kagent_batch_requests{state=\"queued\"} 0\n",
                        "kagent_batch_requests{state=\"done\"} 0\n",
                        "kagent_queue_picks_total{rule=\"cold\"} 1\n",
                        "kagent_queue_picks_total{rule=\"warm\"} 1\n",
                        "kagent_warm_problems_limit 16\n",
                        "kagent_warm_problems{gpu=\"0\"} 0\n",
                        "kagent_warm_gpu_bytes{gpu=\"0\"} 0\n",
                        "kagent_warm_host_bytes{gpu=\"0\"} 0\n",
                        "kagent_problem_starts_total{gpu=\"0\",how=\"ahead\"} 0\n",
                        "kagent_problem_starts_total{gpu=\"0\",how=\"in_turn\"} 0\n",
                        "kagent_problem_evictions_total{gpu=\"0\"} 0\n",
                        "kagent_spare_servers_limit 1\n",
                        "kagent_spare_servers{gpu=\"0\"} 0\n",
                        "kagent_spare_servers_used_total{gpu=\"0\"} 0\n",
                        "kagent_evaluations_total{outcome=\"correct\"} 1\n",
                        "kagent_evaluations_total{outcome=\"compile_error\"} 1\n",
                        "kagent_evaluation_latency_seconds_bucket{le=\"+Inf\"} 2\n",
                        "kagent_evaluation_latency_seconds_count 2\n",
                        "kagent_gpu_busy_seconds_total{gpu=\"0\"} ",
                        "kagent_gpu_busy_ratio{gpu=\"0\"} ",
                        "kagent_http_responses_total{code=\"400\"} 1\n",
                        "# TYPE kagent_evaluation_latency_seconds histogram\n"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  // Every line is a comment or `name{labels} value`, every sample's family declared with # TYPE.
  const std::regex sample(R"(([a-z_]+)(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? ([-+0-9.eE]+|[+]Inf))");
  std::istringstream in(t);
  std::string line;
  std::set<std::string> typed;
  long last_bucket = -1;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    std::smatch m2;
    ASSERT_TRUE(std::regex_match(line, m2, sample)) << line;
    std::string family = m2[1].str();
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (family.size() > strlen(suffix) &&
          family.compare(family.size() - strlen(suffix), strlen(suffix), suffix) == 0 &&
          typed.count(family.substr(0, family.size() - strlen(suffix))))
        family = family.substr(0, family.size() - strlen(suffix));
    EXPECT_TRUE(typed.count(family)) << line;
    if (line.find("_bucket{") != std::string::npos) {  // cumulative
      const long v = std::stol(line.substr(line.rfind(' ') + 1));
      EXPECT_GE(v, last_bucket) << line;
      last_bucket = v;
    }
  }
}
