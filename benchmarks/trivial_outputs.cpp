// trivial_outputs: would a constant or an all-zero output pass kagent's correctness check on a
// problem? For every floating output of every problem recorded by
// `benchmarks/load_all_problems.py --stats FILE [--fp64]` (the reference's figures on the GPU: finite
// count, range, largest and smallest |value|, sum and sum of squares; with --fp64 its fp64 twin's
// sum and sum of squares and the reference's squared error against it), the rules themselves judge
// two candidates at the default tolerance and at 1e-2:
//   zero      every element 0;
//   constant  one value everywhere: the reference's mean (the constant nearest it in L2) for the
//             norm-wise rule, the midpoint of its range (the constant nearest it element by
//             element) for the element rule; the trivial rule fails any constant alike.
// A candidate fails by the first rule that fails it: trivial and norm-wise (output_rules.hpp),
// then the element rule (compare_rule.hpp), decided exactly at the reference's extremes, where
// |c - r| - rtol |r| is largest. The precision rule is left out (it needs the fp64 reference's
// figures), so a pass here is an upper bound on what passes kagent eval.
//
//   trivial_outputs STATS.jsonl
//
// Prints a table per tolerance and every output on which either candidate passes, with the
// reference's figures: the goal is that those are references that are themselves constant or all
// near zero. Exit 0 when the file was read, 2 when it cannot be.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/protocol/compare_rule.hpp"
#include "kagent/protocol/output_rules.hpp"

namespace {

struct Output {
  std::string problem, tensor;
  kagent::DType dtype = kagent::DType::f32;
  double n = 0, min = 0, max = 0, max_abs = 0, sum = 0, sum_sq = 0;
  bool has64 = false;
  double sum64 = 0, sum_sq64 = 0, sq_referr64 = 0;
};

kagent::WholeOutput whole(const Output& o, double c) {
  kagent::WholeOutput w;
  w.tensor = o.tensor;
  w.dtype = o.dtype;
  w.numel = static_cast<uint64_t>(o.n);
  w.out_min = w.out_max = c;
  w.out_max_abs = std::fabs(c);
  w.ref_min = o.min;
  w.ref_max = o.max;
  w.ref_max_abs = o.max_abs;
  // sum (c - r)^2 = n c^2 - 2 c sum r + sum r^2; the mean's is sum r^2 - n mean^2 (never below 0).
  w.sq_err = std::max(0.0, o.n * c * c - 2 * c * o.sum + o.sum_sq);
  w.sq_ref = o.sum_sq;
  if (o.has64) {
    w.has_fp64 = true;
    w.sq_err64 = std::max(0.0, o.n * c * c - 2 * c * o.sum64 + o.sum_sq64);
    w.sq_ref64 = o.sum_sq64;
    w.sq_referr64 = o.sq_referr64;
  }
  return w;
}

// "trivial", "norm-wise", "element", or "" where the candidate passes every rule here.
std::string verdict(const Output& o, double c_whole, double c_element, const kagent::Tolerance& t) {
  const kagent::WholeOutput w = whole(o, c_whole);
  if (kagent::trivial_output(w, t)) return "trivial";
  if (kagent::normwise_failure(w, t)) return "norm-wise";
  for (double r : {o.min, o.max})
    if (kagent::element_verdict(c_element, r, 0, false, t.atol, t.rtol) != kagent::kElementPasses) return "element";
  return "";
}

std::vector<Output> read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path));
  std::vector<Output> outs;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty()) continue;
    try {
      const auto j = nlohmann::json::parse(line);
      for (const auto& x : j.at("outputs")) {
        if (x.value("finite", 0) == 0) continue;
        Output o;
        o.problem = j.at("problem").get<std::string>();
        o.tensor = x.at("tensor").get<std::string>();
        const auto dt = kagent::parse_dtype(x.at("dtype").get<std::string>());
        if (!dt) throw std::runtime_error("dtype " + x.at("dtype").dump());
        o.dtype = *dt;
        o.n = x.at("finite").get<double>();
        o.min = x.at("min").get<double>();
        o.max = x.at("max").get<double>();
        o.max_abs = x.at("max_abs").get<double>();
        o.sum = x.at("sum").get<double>();
        o.sum_sq = x.at("sum_sq").get<double>();
        if (x.contains("sq_referr64")) {
          o.has64 = true;
          o.sum64 = x.at("sum64").get<double>();
          o.sum_sq64 = x.at("sum_sq64").get<double>();
          o.sq_referr64 = x.at("sq_referr64").get<double>();
        }
        outs.push_back(o);
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", path, no, e.what()));
    }
  }
  return outs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: trivial_outputs STATS.jsonl (from benchmarks/load_all_problems.py --stats)\n";
    return 2;
  }
  std::vector<Output> outs;
  try {
    outs = read(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "trivial_outputs: " << e.what() << "\n";
    return 2;
  }
  const auto with64 = std::count_if(outs.begin(), outs.end(), [](const Output& o) { return o.has64; });
  std::cout << fmt::format("{} floating outputs with finite values ({} with the fp64 reference's figures), from {}\n",
                           outs.size(), with64, argv[1]);
  for (const kagent::Tolerance t : {kagent::Tolerance{}, kagent::Tolerance{1e-2, 1e-2}}) {
    struct Count {
      int trivial = 0, normwise = 0, element = 0, passes = 0;
      void add(const std::string& v) {
        (v == "trivial" ? trivial : v == "norm-wise" ? normwise : v == "element" ? element : passes)++;
      }
    } zero, constant;
    std::vector<std::string> passing;
    for (const Output& o : outs) {
      const std::string z = verdict(o, 0.0, 0.0, t);
      const std::string c = verdict(o, o.sum / o.n, (o.min + o.max) / 2, t);
      zero.add(z);
      constant.add(c);
      if (z.empty() || c.empty())
        passing.push_back(fmt::format(
            "  {}:{} {}{} passes; reference [{:.6g}, {:.6g}], largest |value| {:.3g}, "
            "spread / largest {:.3g}, {} elements",
            o.problem, o.tensor, z.empty() ? "zero" : "", c.empty() ? (z.empty() ? " and constant" : "constant") : "",
            o.min, o.max, o.max_abs, o.max_abs > 0 ? (o.max - o.min) / o.max_abs : 0.0, o.n));
    }
    std::cout << fmt::format("\n{} ({} outputs)\n", kagent::tolerance_text(t), outs.size());
    std::cout << "| candidate | fails: trivial | norm-wise | element | passes |\n| --- | ---: | ---: | ---: | ---: |\n";
    for (const auto& [name, n] : {std::pair{"zero", zero}, std::pair{"constant", constant}})
      std::cout << fmt::format("| {} | {} | {} | {} | {} |\n", name, n.trivial, n.normwise, n.element, n.passes);
    for (const auto& p : passing) std::cout << p << "\n";
  }
  return 0;
}
