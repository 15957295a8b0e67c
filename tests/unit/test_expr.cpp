#include <gtest/gtest.h>

#include <climits>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "kagent/spec/expr.hpp"

namespace kagent {
namespace {

// Shapes of a pretend forward call: x is 2-D, v is 1-D.
const std::map<std::string, std::vector<int64_t>, std::less<>> kShapes = {
    {"x", {128, 768}},
    {"v", {1000}},
    {"big", {INT64_MAX / 2, 4}},
};

const std::vector<int64_t>* lookup(std::string_view name) {
  auto it = kShapes.find(name);
  return it == kShapes.end() ? nullptr : &it->second;
}

int64_t eval(std::string_view text) {
  return Expr::parse(text).eval_int(lookup);
}

// Returns the ExprError of parsing and evaluating text; fails the test when there is none.
ExprError error_of(std::string_view text) {
  try {
    Expr::parse(text).eval(lookup);
  } catch (const ExprError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for '" << text << "'";
  return ExprError("", -1);
}

TEST(Expr, IntegerLiteral) {
  EXPECT_EQ(eval("42"), 42);
}

TEST(Expr, MultiplicationBindsTighterThanAddition) {
  EXPECT_EQ(eval("2 + 3 * 4"), 14);
  EXPECT_EQ(eval("2 * 3 + 4"), 10);
}

TEST(Expr, SubtractionAndDivisionAreLeftAssociative) {
  EXPECT_EQ(eval("10 - 3 - 2"), 5);
  EXPECT_EQ(eval("100 / 10 / 5"), 2);
}

TEST(Expr, ParenthesesOverridePrecedence) {
  EXPECT_EQ(eval("(2 + 3) * 4"), 20);
}

TEST(Expr, ModuloHasProductPrecedence) {
  EXPECT_EQ(eval("1 + 10 % 4"), 3);
}

TEST(Expr, UnaryMinus) {
  EXPECT_EQ(eval("-5 + 2"), -3);
  EXPECT_EQ(eval("-(2 + 3)"), -5);
  EXPECT_EQ(eval("- -4"), 4);
}

TEST(Expr, IntegerDivisionTruncatesTowardZero) {
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("-7 / 2"), -3);
  EXPECT_EQ(eval("-7 % 2"), -1);
}

TEST(Expr, CdivRoundsUp) {
  EXPECT_EQ(eval("cdiv(10, 4)"), 3);
  EXPECT_EQ(eval("cdiv(12, 4)"), 3);
  EXPECT_EQ(eval("cdiv(1, 256)"), 1);
  EXPECT_EQ(eval("cdiv(0, 256)"), 0);
  EXPECT_EQ(eval("cdiv(-7, 2)"), -3);
}

TEST(Expr, MinAndMax) {
  EXPECT_EQ(eval("min(3, 9)"), 3);
  EXPECT_EQ(eval("max(3, 9)"), 9);
  EXPECT_EQ(eval("max(min(x.shape[0], 64), 1) * 2"), 128);
}

TEST(Expr, ShapeIndex) {
  EXPECT_EQ(eval("x.shape[0]"), 128);
  EXPECT_EQ(eval("x.shape[1]"), 768);
}

TEST(Expr, NegativeShapeIndexCountsFromTheEnd) {
  EXPECT_EQ(eval("x.shape[-1]"), 768);
  EXPECT_EQ(eval("x.shape[-2]"), 128);
}

TEST(Expr, Numel) {
  EXPECT_EQ(eval("numel(x)"), 128 * 768);
  EXPECT_EQ(eval("cdiv(numel(v), 256)"), 4);
}

TEST(Expr, SpacesAreAllowedBetweenTokens) {
  EXPECT_EQ(eval("  x . shape [ -1 ] + cdiv ( 3 , 2 ) "), 770);
}

TEST(Expr, DecimalLiteralsEvaluateToDoubles) {
  ExprValue half = Expr::parse("0.5").eval(lookup);
  EXPECT_FALSE(half.is_int);
  EXPECT_DOUBLE_EQ(half.f, 0.5);
  EXPECT_DOUBLE_EQ(Expr::parse("1e-3").eval(lookup).as_double(), 1e-3);
  EXPECT_DOUBLE_EQ(Expr::parse("2.5E2").eval(lookup).as_double(), 250.0);
}

TEST(Expr, MixedArithmeticBecomesDecimal) {
  ExprValue v = Expr::parse("1 / 2.0 + x.shape[0]").eval(lookup);
  EXPECT_FALSE(v.is_int);
  EXPECT_DOUBLE_EQ(v.f, 128.5);
}

TEST(Expr, EvalIntRejectsDecimals) {
  EXPECT_THROW(Expr::parse("0.5 * 2").eval_int(lookup), ExprError);
}

TEST(Expr, TensorNamesInOrderWithoutDuplicates) {
  Expr e = Expr::parse("numel(v) + x.shape[0] * v.shape[0] + cdiv(x.shape[1], 2)");
  EXPECT_EQ(e.tensor_names(), (std::vector<std::string>{"v", "x"}));
  EXPECT_TRUE(Expr::parse("3 * 4").tensor_names().empty());
}

TEST(Expr, KeepsItsText) {
  EXPECT_EQ(Expr::parse("x.shape[0] * 2").text(), "x.shape[0] * 2");
}

TEST(Expr, ConstantHasDecimalText) {
  Expr e = Expr::constant(-256);
  EXPECT_EQ(e.text(), "-256");
  EXPECT_EQ(e.eval_int(lookup), -256);
}

TEST(Expr, DefaultIsZero) {
  Expr e;
  EXPECT_EQ(e.text(), "0");
  EXPECT_EQ(e.eval_int(lookup), 0);
}

TEST(ExprError, MissingCloseParenthesisNamesColumn) {
  ExprError e = error_of("(1 + 2");
  EXPECT_EQ(e.column(), 7);
  EXPECT_NE(std::string(e.what()).find("expected ')' at column 7"), std::string::npos) << e.what();
}

TEST(ExprError, MissingOperandNamesColumn) {
  ExprError e = error_of("3 * ");
  EXPECT_EQ(e.column(), 5);
  EXPECT_NE(std::string(e.what()).find("at column 5"), std::string::npos) << e.what();
}

TEST(ExprError, TrailingGarbage) {
  ExprError e = error_of("3 4");
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(std::string(e.what()).find("expected an operator or the end of the expression at column 3"),
            std::string::npos)
      << e.what();
}

TEST(ExprError, EmptyText) {
  EXPECT_NE(std::string(error_of("").what()).find("empty"), std::string::npos);
  EXPECT_NE(std::string(error_of("   ").what()).find("empty"), std::string::npos);
}

TEST(ExprError, UnknownFunction) {
  ExprError e = error_of("2 + sqrt(4)");
  EXPECT_EQ(e.column(), 5);
  EXPECT_NE(std::string(e.what()).find("unknown function 'sqrt'"), std::string::npos) << e.what();
}

// A bare name is a scalar argument; with no such scalar the error says how a size is written.
TEST(ExprError, BareNameThatIsNoScalarSuggestsShape) {
  ExprError e = error_of("x + 1");
  EXPECT_EQ(e.column(), 1);
  EXPECT_NE(std::string(e.what()).find("unknown scalar 'x'"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("x.shape[i]"), std::string::npos) << e.what();
}

std::optional<ExprValue> scalars(std::string_view name) {
  if (name == "s") return ExprValue{false, 0, 3.5};
  if (name == "k") return ExprValue{true, 7, 0.0};
  return std::nullopt;
}

TEST(Expr, ScalarArgumentsByBareName) {
  EXPECT_DOUBLE_EQ(Expr::parse("s").eval(lookup, scalars).f, 3.5);
  EXPECT_FALSE(Expr::parse("s * 2").eval(lookup, scalars).is_int);
  EXPECT_EQ(Expr::parse("cdiv(x.shape[1], k) + k").eval_int(lookup, scalars), 110 + 7);
}

TEST(Expr, ScalarNamesAreNotTensorNames) {
  Expr e = Expr::parse("k * x.shape[0] + numel(v) + s + k");
  EXPECT_EQ(e.scalar_names(), (std::vector<std::string>{"k", "s"}));
  EXPECT_EQ(e.tensor_names(), (std::vector<std::string>{"x", "v"}));
}

TEST(ExprError, DecimalScalarIsNotAnInteger) {
  EXPECT_THROW(Expr::parse("s").eval_int(lookup, scalars), ExprError);
}

TEST(ExprError, ShapeIndexMustBeAnIntegerLiteral) {
  ExprError e = error_of("x.shape[i]");
  EXPECT_EQ(e.column(), 9);
  EXPECT_NE(std::string(e.what()).find("integer shape index"), std::string::npos) << e.what();
}

TEST(ExprError, MisspelledShape) {
  ExprError e = error_of("x.size[0]");
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(std::string(e.what()).find("expected 'shape'"), std::string::npos) << e.what();
}

TEST(ExprError, CdivNeedsTwoArguments) {
  ExprError e = error_of("cdiv(4)");
  EXPECT_EQ(e.column(), 7);
  EXPECT_NE(std::string(e.what()).find("expected ','"), std::string::npos) << e.what();
}

TEST(ExprError, BadExponent) {
  ExprError e = error_of("1e+");
  EXPECT_EQ(e.column(), 4);
}

TEST(ExprError, IntegerLiteralOutOfRange) {
  ExprError e = error_of("99999999999999999999");
  EXPECT_EQ(e.column(), 1);
  EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
}

TEST(ExprError, DivisionByZero) {
  ExprError e = error_of("4 / (2 - 2)");
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  EXPECT_NE(std::string(error_of("1.5 / 0").what()).find("division by zero"), std::string::npos);
  EXPECT_NE(std::string(error_of("cdiv(4, 0)").what()).find("division by zero"), std::string::npos);
}

TEST(ExprError, ModuloByZero) {
  ExprError e = error_of("4 % 0");
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(std::string(e.what()).find("modulo by zero"), std::string::npos) << e.what();
}

TEST(ExprError, ModuloAndCdivNeedIntegers) {
  EXPECT_NE(std::string(error_of("5 % 1.5").what()).find("integer"), std::string::npos);
  EXPECT_NE(std::string(error_of("cdiv(5.0, 2)").what()).find("integer"), std::string::npos);
}

TEST(ExprError, ShapeIndexOutOfRange) {
  ExprError e = error_of("1 + x.shape[2]");
  EXPECT_EQ(e.column(), 5);
  EXPECT_NE(std::string(e.what()).find("out of range: 'x' has 2 dimensions"), std::string::npos) << e.what();
  EXPECT_NE(std::string(error_of("x.shape[-3]").what()).find("out of range"), std::string::npos);
}

TEST(ExprError, UnknownTensor) {
  ExprError e = error_of("numel(y)");
  EXPECT_EQ(e.column(), 1);
  EXPECT_NE(std::string(e.what()).find("unknown tensor 'y'"), std::string::npos) << e.what();
  EXPECT_NE(std::string(error_of("y.shape[0]").what()).find("unknown tensor 'y'"), std::string::npos);
}

TEST(ExprError, Overflow) {
  EXPECT_NE(std::string(error_of("9223372036854775807 + 1").what()).find("overflow"), std::string::npos);
  EXPECT_NE(std::string(error_of("4611686018427387904 * 2").what()).find("overflow"), std::string::npos);
  EXPECT_NE(std::string(error_of("-9223372036854775807 - 2").what()).find("overflow"), std::string::npos);
  EXPECT_NE(std::string(error_of("numel(big)").what()).find("overflow"), std::string::npos);
  EXPECT_NE(std::string(error_of("(-9223372036854775807 - 1) / -1").what()).find("overflow"), std::string::npos);
  EXPECT_NE(std::string(error_of("-(-9223372036854775807 - 1)").what()).find("overflow"), std::string::npos);
}

TEST(ExprError, DeepNestingIsAnErrorNotACrash) {
  std::string deep(10000, '(');
  EXPECT_THROW(Expr::parse(deep + "1"), ExprError);
}

// Hostile expressions (issue 16): 10^5 '+' terms built a tree as tall as the chain, whose
// evaluation and destruction recursed off the stack.
TEST(ExprBounds, LongChainsAreRefusedNotACrash) {
  std::string chain = "1";
  for (int i = 0; i < 100'000; ++i) chain += "+1";
  auto e = error_of(chain);
  EXPECT_NE(std::string(e.what()).find("at most 2000"), std::string::npos) << e.what();
  // Within the length bound, a chain deeper than 100 operations is refused by its height.
  std::string deep = "1";
  for (int i = 0; i < 150; ++i) deep += "+1";
  e = error_of(deep);
  EXPECT_NE(std::string(e.what()).find("too complex"), std::string::npos) << e.what();
  std::string fine = "1";
  for (int i = 0; i < 90; ++i) fine += "+1";
  EXPECT_EQ(eval(fine), 91);
  EXPECT_NE(std::string(error_of(std::string(150, '-') + "1").what()).find("too"), std::string::npos);
}

TEST(ExprBounds, DecimalsThatLeaveTheFiniteNumbersAreRefused) {
  auto e = error_of("1e300 * 1e300");
  EXPECT_NE(std::string(e.what()).find("not a finite number"), std::string::npos) << e.what();
  EXPECT_EQ(e.column(), 7);
  EXPECT_NE(std::string(error_of("1e400").what()).find("out of range"), std::string::npos);
  const ScalarLookup inf = [](std::string_view) -> std::optional<ExprValue> {
    return ExprValue{false, 0, std::numeric_limits<double>::infinity()};
  };
  EXPECT_THROW(Expr::parse("s * 2").eval(lookup, inf), ExprError);
}

}  // namespace
}  // namespace kagent
