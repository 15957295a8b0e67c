// --samples DIR: each problem's samples, each one an item of the batch, judged by the backend.
#include "kagent/bench/samples.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/natural_order.hpp"
#include "kagent/judge/verdict.hpp"

namespace kagent::bench {

namespace fs = std::filesystem;

std::vector<fs::path> find_samples(const fs::path& dir, const Problem& p) {
  std::error_code ec;
  fs::path folder = dir / p.level / p.name;
  if (p.level.empty() || !fs::is_directory(folder, ec)) folder = dir / p.name;
  std::vector<fs::path> out;
  if (!fs::is_directory(folder, ec)) return out;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    const std::string ext = e.path().extension().string();
    if (name.empty() || name[0] == '.' || name[0] == '_' || (ext != ".cu" && ext != ".py")) continue;
    if (!e.is_regular_file(ec)) continue;
    out.push_back(fs::absolute(e.path()).lexically_normal());
  }
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
  return out;
}

std::vector<Problem> expand_samples(const std::vector<Problem>& problems, const fs::path& dir) {
  std::vector<Problem> out;
  for (const Problem& p : problems) {
    const std::vector<fs::path> samples = find_samples(dir, p);
    if (samples.empty()) out.push_back(p);
    for (const fs::path& s : samples) {
      Problem item = p;
      item.sample = s;
      out.push_back(std::move(item));
    }
  }
  return out;
}

std::string sample_key(const std::string& problem, const std::string& sample) {
  return sample.empty() ? problem : problem + "\n" + sample;
}

report::ResultRecord record_from_eval_record(const Problem& p, const nlohmann::json& record) {
  const judge::Verdict v = judge::verdict_of(record);
  report::ResultRecord r;
  r.problem = p.id;
  r.level = p.level;
  r.sample = p.sample.filename().string();
  r.candidate = p.sample.string();
  r.status = v.status;
  r.score = v.score;
  if (v.status != "correct") r.error = v.message;
  return r;
}

judge::CandidateRequest sample_request(const SampleJobOptions& options, const Problem& p) {
  judge::CandidateRequest rq = options.request;
  rq.file = p.sample;
  rq.name = p.sample.string();
  rq.problem = p.path;
  return rq;
}

namespace {

class SampleJob : public ProblemJob {
 public:
  SampleJob(SampleJobOptions o, int gpu) : opt_(std::move(o)), gpu_(gpu) {}

  void expect(const std::vector<Problem>& next) override {
    std::vector<judge::CandidateRequest> requests;
    for (const Problem& p : next)
      if (!p.sample.empty()) requests.push_back(sample_request(opt_, p));
    if (requests.empty()) return;
    try {
      if (!backend_) backend_ = opt_.backends(gpu_);
      backend_->expect(requests);
    } catch (const std::exception&) {  // a hint: the evaluation reports whatever fails
    }
  }

  std::optional<judge::WarmState> warm() override {
    if (!backend_) return std::nullopt;
    return backend_->warm();
  }

  std::optional<report::ResultRecord> run(const Problem& p) override {
    if (p.sample.empty()) {
      report::ResultRecord r;
      r.problem = p.id;
      r.level = p.level;
      r.status = "unsolved";
      r.error = fmt::format("no samples in {}", (opt_.samples / p.level / p.name).string());
      return r;
    }
    const judge::CandidateRequest rq = sample_request(opt_, p);
    if (opt_.prebuilder) opt_.prebuilder->wait_for(rq);
    if (!backend_) backend_ = opt_.backends(gpu_);
    try {
      return record_from_eval_record(p, backend_->evaluate(rq));
    } catch (const EnvError&) {
      backend_.reset();
      throw;
    } catch (const InputError& e) {
      // The problem, or a plan that does not fit it (found before the GPU): the sample is not judged.
      report::ResultRecord r = error_record(p, e.what(), gpu_);
      r.sample = p.sample.filename().string();
      r.candidate = p.sample.string();
      return r;
    }
  }

 private:
  SampleJobOptions opt_;
  int gpu_;
  std::unique_ptr<judge::EvalBackend> backend_;
};

}  // namespace

std::unique_ptr<ProblemJob> make_sample_job(const SampleJobOptions& options, int gpu) {
  return std::make_unique<SampleJob>(options, gpu);
}

}  // namespace kagent::bench
