#pragma once
// Launch-plan expressions (docs/candidate.md): integers, + - * / % ( ), cdiv(a,b), min(a,b), max(a,b),
// X.shape[i], numel(X), bare names of the operator's scalar arguments; plus decimal literals for
// f32/f64 scalar arguments. Parsed once into a small tree, evaluated per forward call against the
// tensor shapes and scalar values of that call.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kagent {

// A parse or evaluation error; column is 1-based within the expression text (0 = whole text).
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& message, int column) : std::runtime_error(message), column_(column) {}
  int column() const { return column_; }

 private:
  int column_;
};

// An evaluated value: integer unless a decimal literal took part.
struct ExprValue {
  bool is_int = true;
  int64_t i = 0;
  double f = 0.0;
  double as_double() const { return is_int ? static_cast<double>(i) : f; }
};

// Looks up a tensor's shape by name; returns nullptr for an unknown name.
using ShapeLookup = std::function<const std::vector<int64_t>*(std::string_view name)>;
// Looks up a scalar argument's value by name; nullopt for an unknown name.
using ScalarLookup = std::function<std::optional<ExprValue>(std::string_view name)>;

class Expr {
 public:
  struct Node;
  Expr();                                    // the constant 0
  static Expr parse(std::string_view text);  // throws ExprError
  static Expr constant(int64_t value);

  ExprValue eval(const ShapeLookup& shapes, const ScalarLookup& scalars = {}) const;    // throws ExprError
  int64_t eval_int(const ShapeLookup& shapes, const ScalarLookup& scalars = {}) const;  // ... if not integral
  const std::string& text() const { return text_; }
  // Tensor names this expression reads shapes of, in order of appearance (duplicates removed).
  std::vector<std::string> tensor_names() const;
  // Scalar argument names it reads, likewise.
  std::vector<std::string> scalar_names() const;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

}  // namespace kagent
