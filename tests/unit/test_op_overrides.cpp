// --atol/--rtol/--tolerance: laid over an op's own tolerance, refused when not a finite number
// >= 0, and passed to a child kagent (bench --agent) as flags that read back exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kagent/common/error.hpp"
#include "kagent/spec/op_overrides.hpp"

using namespace kagent;

TEST(OpOverrides, ReplaceOnlyWhatIsGiven) {
  Op op;
  op.tolerance = {1e-4, 2e-4};
  OpOverrides o;
  EXPECT_TRUE(o.empty());
  o.apply(op);
  EXPECT_EQ(op.tolerance.atol, 1e-4);
  EXPECT_EQ(op.tolerance.rtol, 2e-4);
  o.atol = 1e-2;
  o.apply(op);
  EXPECT_EQ(op.tolerance.atol, 1e-2);
  EXPECT_EQ(op.tolerance.rtol, 2e-4) << "--atol alone keeps the op's rtol";
  o.rtol = 0;
  o.apply(op);
  EXPECT_EQ(op.tolerance.rtol, 0.0);
}

TEST(OpOverrides, RefusesNegativeNanAndInfinity) {
  for (double bad : {-1e-9, std::nan(""), std::numeric_limits<double>::infinity()}) {
    OpOverrides o;
    o.rtol = bad;
    Op op;
    try {
      o.apply(op);
      FAIL() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--rtol"), std::string::npos) << e.what();
    }
  }
}

TEST(OpOverrides, ChildFlagsReadBackTheSameNumbers) {
  OpOverrides o;
  o.atol = 0.1 + 0.2;  // not a short decimal: the text must still round-trip
  o.rtol = 1e-7;
  auto args = o.to_args();
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0], "--atol");
  EXPECT_EQ(std::stod(args[1]), *o.atol);
  EXPECT_EQ(args[2], "--rtol");
  EXPECT_EQ(std::stod(args[3]), *o.rtol);
  EXPECT_TRUE(OpOverrides{}.to_args().empty());
}

TEST(OpOverrides, ToleranceText) {
  EXPECT_EQ(tolerance_text({1e-4, 0.01}), "atol 0.0001, rtol 0.01");
}
