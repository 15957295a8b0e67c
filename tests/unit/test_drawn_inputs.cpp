// A ModelNew solution against a reference that draws random numbers in forward: the worker's
// trial request carries the generator state to start from, and a wrong result says which draws
// the reference makes and, when the worker saw it, that the solution drew otherwise.
#include <gtest/gtest.h>

#include "kagent/eval/drawn_inputs.hpp"

using namespace kagent;

namespace {

TensorSpec drawn(std::string name, std::string meaning) {
  TensorSpec t;
  t.name = std::move(name);
  t.shape = {128, 16384};
  t.drawn = std::move(meaning);
  return t;
}

}  // namespace

TEST(DrawnInputs, TrialRequestCarriesTheDrawsOnlyWhereTheReferenceDraws) {
  const nlohmann::json with = {{"tensors", nlohmann::json::array()},
                               {"draws", {{"seed", 1234567890123ULL}, {"rng_after", {{"cpu", "ab"}}}}}};
  nlohmann::json rq = modelnew_trial_request(with);
  EXPECT_EQ(rq["cmd"], "trial");
  ASSERT_TRUE(rq.contains("draws")) << rq.dump();
  EXPECT_EQ(rq["draws"]["seed"].get<uint64_t>(), 1234567890123ULL);
  EXPECT_EQ(rq["draws"]["rng_after"]["cpu"], "ab");
  const nlohmann::json without = {{"tensors", nlohmann::json::array()}, {"fp64_note", "x"}};
  EXPECT_EQ(modelnew_trial_request(without), (nlohmann::json{{"cmd", "trial"}}))
      << "a problem without draws is unchanged";
}

TEST(DrawnInputs, HintNamesTheDrawsAndTheWorkersNote) {
  const std::vector<TensorSpec> draws = {
      drawn("dropout_mult", "drawn by nn.Dropout(p=0.2) in forward, call 1: 0 or 1/(1-p) = 1.25 per element")};
  const std::string plain = draws_hint(draws, nlohmann::json::object());
  EXPECT_NE(plain.find("the reference draws random numbers in forward: dropout_mult: drawn by nn.Dropout(p=0.2)"),
            std::string::npos)
      << plain;
  EXPECT_NE(plain.find("the same ops on the same shapes, in the same order"), std::string::npos) << plain;
  const std::string noted =
      draws_hint(draws, {{"draws_note", "the solution drew other random numbers than the reference: ..."}});
  EXPECT_NE(noted.find("; the solution drew other random numbers than the reference"), std::string::npos) << noted;
  EXPECT_EQ(draws_hint({}, {{"draws_note", "x"}}), "") << "nothing to say where the reference draws nothing";
}
