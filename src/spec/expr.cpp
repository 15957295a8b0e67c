#include "kagent/spec/expr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace kagent {

// The parsed tree. Nodes are immutable once built, so copies of an Expr share them safely.
struct Expr::Node {
  enum class Kind { integer, decimal, negate, add, sub, mul, div, mod, cdiv, min, max, shape, numel, scalar };
  Kind kind = Kind::integer;
  int column = 0;      // 1-based position of the operator, function or tensor name (for eval errors)
  int64_t i = 0;       // integer literal, or the index of X.shape[i]
  double f = 0.0;      // decimal literal
  std::string tensor;  // X of X.shape[i] and numel(X)
  std::string scalar;  // a bare name: one of the operator's scalar arguments
  int height = 1;      // of the subtree: bounds the recursion of eval, the name walks and the destructor
  std::shared_ptr<const Node> lhs;
  std::shared_ptr<const Node> rhs;
};

namespace {

using Node = Expr::Node;
using NodePtr = std::shared_ptr<const Node>;
using Kind = Node::Kind;

// Deep enough for any real launch plan, shallow enough that "((((...)))" cannot exhaust the stack.
constexpr int kMaxDepth = 100;
// The parse is iterative along a chain "a+b+c+...", but the tree it builds is as tall as the
// chain, and evaluating, walking and freeing it recurse: both the text and the tree are bounded.
constexpr size_t kMaxLength = 2000;
constexpr int kMaxHeight = 100;

bool is_ident_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

NodePtr make_leaf_int(int64_t value, int column) {
  auto node = std::make_shared<Node>();
  node->kind = Kind::integer;
  node->i = value;
  node->column = column;
  return node;
}

NodePtr make_binary(Kind kind, NodePtr lhs, NodePtr rhs, int column) {
  const int height = 1 + std::max(lhs->height, rhs->height);
  if (height > kMaxHeight)
    throw ExprError(
        fmt::format("expression too complex at column {} (more than {} operations deep)", column, kMaxHeight), column);
  auto node = std::make_shared<Node>();
  node->height = height;
  node->kind = kind;
  node->lhs = std::move(lhs);
  node->rhs = std::move(rhs);
  node->column = column;
  return node;
}

// Recursive descent over the grammar:
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/' | '%') unary)*
//   unary   := '-' unary | primary
//   primary := number | '(' sum ')' | name '.' 'shape' '[' ['-'] digits ']'
//            | ('cdiv' | 'min' | 'max') '(' sum ',' sum ')' | 'numel' '(' name ')' | name
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  NodePtr parse_all() {
    if (text_.size() > kMaxLength)
      throw ExprError(fmt::format("expression of {} characters: at most {}", text_.size(), kMaxLength), 0);
    skip_spaces();
    if (at_end()) throw ExprError("empty expression", 1);
    NodePtr root = parse_sum();
    skip_spaces();
    if (!at_end()) fail_expected("an operator or the end of the expression");
    return root;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  int column() const { return static_cast<int>(pos_) + 1; }

  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
  }

  std::string found() const {
    if (at_end()) return "found the end of the expression";
    return fmt::format("found '{}'", peek());
  }

  [[noreturn]] void fail_expected(std::string_view what) const {
    throw ExprError(fmt::format("expected {} at column {}, {}", what, column(), found()), column());
  }

  // Consumes c (after spaces) or fails saying that c was expected here.
  void expect(char c) {
    skip_spaces();
    if (peek() != c) fail_expected(fmt::format("'{}'", c));
    ++pos_;
  }

  NodePtr parse_sum() {
    if (++depth_ > kMaxDepth)
      throw ExprError(fmt::format("expression nested too deeply at column {}", column()), column());
    NodePtr lhs = parse_product();
    for (;;) {
      skip_spaces();
      char op = peek();
      if (op != '+' && op != '-') break;
      int op_column = column();
      ++pos_;
      NodePtr rhs = parse_product();
      lhs = make_binary(op == '+' ? Kind::add : Kind::sub, lhs, rhs, op_column);
    }
    --depth_;
    return lhs;
  }

  NodePtr parse_product() {
    NodePtr lhs = parse_unary();
    for (;;) {
      skip_spaces();
      char op = peek();
      if (op != '*' && op != '/' && op != '%') break;
      int op_column = column();
      ++pos_;
      NodePtr rhs = parse_unary();
      Kind kind = op == '*' ? Kind::mul : (op == '/' ? Kind::div : Kind::mod);
      lhs = make_binary(kind, lhs, rhs, op_column);
    }
    return lhs;
  }

  NodePtr parse_unary() {
    skip_spaces();
    if (peek() != '-') return parse_primary();
    if (++depth_ > kMaxDepth)
      throw ExprError(fmt::format("expression nested too deeply at column {}", column()), column());
    int op_column = column();
    ++pos_;
    auto node = std::make_shared<Node>();
    node->kind = Kind::negate;
    node->lhs = parse_unary();
    node->height = node->lhs->height + 1;
    node->column = op_column;
    --depth_;
    return node;
  }

  NodePtr parse_primary() {
    skip_spaces();
    char c = peek();
    if (is_digit(c)) return parse_number();
    if (is_ident_start(c)) return parse_name();
    if (c == '(') {
      ++pos_;
      NodePtr inner = parse_sum();
      expect(')');
      return inner;
    }
    fail_expected("a number, a tensor's shape, a function or '('");
  }

  // Integer literal, or a decimal one (with '.' or an exponent) for f32/f64 scalar arguments.
  NodePtr parse_number() {
    size_t start = pos_;
    int start_column = column();
    bool decimal = false;
    while (is_digit(peek())) ++pos_;
    if (peek() == '.') {
      decimal = true;
      ++pos_;
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      decimal = true;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail_expected("digits of the exponent");
      while (is_digit(peek())) ++pos_;
    }
    std::string_view literal = text_.substr(start, pos_ - start);
    auto node = std::make_shared<Node>();
    node->column = start_column;
    const char* first = literal.data();
    const char* last = literal.data() + literal.size();
    std::from_chars_result result{};
    if (decimal) {
      node->kind = Kind::decimal;
      result = std::from_chars(first, last, node->f);
    } else {
      node->kind = Kind::integer;
      result = std::from_chars(first, last, node->i);
    }
    if (result.ec != std::errc() || result.ptr != last) {
      throw ExprError(fmt::format("number '{}' out of range at column {}", literal, start_column), start_column);
    }
    return node;
  }

  std::string parse_identifier() {
    size_t start = pos_;
    while (is_ident_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // A name is a function call when '(' follows, a tensor whose shape is read when '.' follows,
  // otherwise a scalar argument of the operator (a PyTorch forward's int/float parameter).
  NodePtr parse_name() {
    int name_column = column();
    std::string name = parse_identifier();
    skip_spaces();
    if (peek() == '(') return parse_call(name, name_column);
    if (peek() == '.') return parse_shape(name, name_column);
    auto node = std::make_shared<Node>();
    node->kind = Kind::scalar;
    node->column = name_column;
    node->scalar = name;
    return node;
  }

  NodePtr parse_call(const std::string& name, int name_column) {
    if (name == "numel") {
      expect('(');
      skip_spaces();
      if (!is_ident_start(peek())) fail_expected("a tensor name");
      auto node = std::make_shared<Node>();
      node->kind = Kind::numel;
      node->column = name_column;
      node->tensor = parse_identifier();
      expect(')');
      return node;
    }
    Kind kind;
    if (name == "cdiv") {
      kind = Kind::cdiv;
    } else if (name == "min") {
      kind = Kind::min;
    } else if (name == "max") {
      kind = Kind::max;
    } else {
      throw ExprError(
          fmt::format("unknown function '{}' at column {} (expected cdiv, min, max or numel)", name, name_column),
          name_column);
    }
    expect('(');
    NodePtr lhs = parse_sum();
    expect(',');
    NodePtr rhs = parse_sum();
    expect(')');
    return make_binary(kind, lhs, rhs, name_column);
  }

  // X.shape[i] with i an integer literal; a negative i counts from the end (Python style).
  NodePtr parse_shape(const std::string& name, int name_column) {
    ++pos_;  // the '.'
    skip_spaces();
    int word_column = column();
    if (parse_identifier() != "shape") {
      pos_ = static_cast<size_t>(word_column - 1);
      fail_expected("'shape'");
    }
    expect('[');
    skip_spaces();
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (!is_digit(peek())) fail_expected("an integer shape index");
    int index_column = column();
    size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    int64_t index = 0;
    std::string_view digits = text_.substr(start, pos_ - start);
    auto result = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (result.ec != std::errc()) {
      throw ExprError(fmt::format("shape index '{}' out of range at column {}", digits, index_column), index_column);
    }
    expect(']');
    auto node = std::make_shared<Node>();
    node->kind = Kind::shape;
    node->column = name_column;
    node->tensor = name;
    node->i = negative ? -index : index;
    return node;
  }
};

ExprValue int_value(int64_t i) {
  ExprValue v;
  v.is_int = true;
  v.i = i;
  return v;
}

ExprValue double_value(double f) {
  ExprValue v;
  v.is_int = false;
  v.f = f;
  return v;
}

std::string_view op_name(Kind kind) {
  switch (kind) {
    case Kind::add:
      return "'+'";
    case Kind::sub:
      return "'-'";
    case Kind::mul:
      return "'*'";
    case Kind::div:
      return "'/'";
    case Kind::mod:
      return "'%'";
    case Kind::cdiv:
      return "cdiv";
    case Kind::min:
      return "min";
    case Kind::max:
      return "max";
    case Kind::negate:
      return "unary '-'";
    default:
      return "expression";
  }
}

[[noreturn]] void fail_at(const Node& n, const std::string& what) {
  throw ExprError(fmt::format("{} at column {}", what, n.column), n.column);
}

[[noreturn]] void fail_overflow(const Node& n) {
  fail_at(n, fmt::format("integer overflow in {}", op_name(n.kind)));
}

// Ceiling division for any signs: truncate, then step up when the exact quotient is positive
// and not whole. Avoids (a + b - 1) / b, which overflows near the int64 limits.
int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  int64_t r = a % b;
  if (r != 0 && ((r > 0) == (b > 0))) ++q;
  return q;
}

int64_t eval_int_binary(const Node& n, int64_t a, int64_t b) {
  int64_t out = 0;
  switch (n.kind) {
    case Kind::add:
      if (__builtin_add_overflow(a, b, &out)) fail_overflow(n);
      return out;
    case Kind::sub:
      if (__builtin_sub_overflow(a, b, &out)) fail_overflow(n);
      return out;
    case Kind::mul:
      if (__builtin_mul_overflow(a, b, &out)) fail_overflow(n);
      return out;
    case Kind::div:
    case Kind::cdiv:
      if (b == 0) fail_at(n, fmt::format("division by zero in {}", op_name(n.kind)));
      // INT64_MIN / -1 is the one quotient that does not fit (and is undefined behaviour).
      if (a == INT64_MIN && b == -1) fail_overflow(n);
      return n.kind == Kind::div ? a / b : ceil_div(a, b);
    case Kind::mod:
      if (b == 0) fail_at(n, "modulo by zero in '%'");
      if (b == -1) return 0;  // INT64_MIN % -1 is undefined behaviour in C++; the answer is 0
      return a % b;
    case Kind::min:
      return std::min(a, b);
    case Kind::max:
      return std::max(a, b);
    default:
      fail_at(n, "internal error: not a binary operator");
  }
}

// Decimal arithmetic that leaves the finite numbers (1e300 * 1e300) is refused like an integer overflow.
ExprValue finite_value(const Node& n, double f) {
  if (!std::isfinite(f)) fail_at(n, fmt::format("the result of {} is not a finite number", op_name(n.kind)));
  return double_value(f);
}

ExprValue eval_binary(const Node& n, const ExprValue& a, const ExprValue& b) {
  if (a.is_int && b.is_int) return int_value(eval_int_binary(n, a.i, b.i));
  if (n.kind == Kind::mod || n.kind == Kind::cdiv) {
    fail_at(n, fmt::format("{} needs integer operands, not decimals", op_name(n.kind)));
  }
  double x = a.as_double();
  double y = b.as_double();
  switch (n.kind) {
    case Kind::add:
      return finite_value(n, x + y);
    case Kind::sub:
      return finite_value(n, x - y);
    case Kind::mul:
      return finite_value(n, x * y);
    case Kind::div:
      if (y == 0.0) fail_at(n, "division by zero in '/'");
      return finite_value(n, x / y);
    case Kind::min:
      return double_value(std::min(x, y));
    case Kind::max:
      return double_value(std::max(x, y));
    default:
      fail_at(n, "internal error: not a binary operator");
  }
}

const std::vector<int64_t>& lookup_shape(const Node& n, const ShapeLookup& shapes) {
  const std::vector<int64_t>* shape = shapes ? shapes(n.tensor) : nullptr;
  if (shape == nullptr) fail_at(n, fmt::format("unknown tensor '{}'", n.tensor));
  return *shape;
}

int64_t eval_shape(const Node& n, const ShapeLookup& shapes) {
  const auto& shape = lookup_shape(n, shapes);
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t index = n.i < 0 ? n.i + rank : n.i;
  if (index < 0 || index >= rank) {
    fail_at(n, fmt::format("{}.shape[{}] is out of range: '{}' has {} dimension{}", n.tensor, n.i, n.tensor, rank,
                           rank == 1 ? "" : "s"));
  }
  return shape[static_cast<size_t>(index)];
}

int64_t eval_numel(const Node& n, const ShapeLookup& shapes) {
  int64_t product = 1;
  for (int64_t dim : lookup_shape(n, shapes)) {
    if (__builtin_mul_overflow(product, dim, &product))
      fail_at(n, fmt::format("integer overflow in numel({})", n.tensor));
  }
  return product;
}

ExprValue eval_scalar(const Node& n, const ScalarLookup& scalars) {
  std::optional<ExprValue> v = scalars ? scalars(n.scalar) : std::nullopt;
  if (!v)
    fail_at(n, fmt::format("unknown scalar '{}' (a bare name is one of the operator's scalar arguments or num_sms; "
                           "a tensor's size is written {}.shape[i] or numel({}))",
                           n.scalar, n.scalar, n.scalar));
  if (!v->is_int && !std::isfinite(v->f)) fail_at(n, fmt::format("scalar '{}' is not a finite number", n.scalar));
  return *v;
}

ExprValue eval_node(const Node& n, const ShapeLookup& shapes, const ScalarLookup& scalars) {
  switch (n.kind) {
    case Kind::integer:
      return int_value(n.i);
    case Kind::decimal:
      return double_value(n.f);
    case Kind::shape:
      return int_value(eval_shape(n, shapes));
    case Kind::numel:
      return int_value(eval_numel(n, shapes));
    case Kind::scalar:
      return eval_scalar(n, scalars);
    case Kind::negate: {
      ExprValue v = eval_node(*n.lhs, shapes, scalars);
      if (!v.is_int) return double_value(-v.f);
      int64_t out = 0;
      if (__builtin_sub_overflow(int64_t{0}, v.i, &out)) fail_overflow(n);
      return int_value(out);
    }
    default: {
      ExprValue a = eval_node(*n.lhs, shapes, scalars);
      ExprValue b = eval_node(*n.rhs, shapes, scalars);
      return eval_binary(n, a, b);
    }
  }
}

// Left-to-right walk, so names come out in the order they appear in the text.
void collect_names(const Node& n, std::string Node::*field, std::vector<std::string>& out) {
  const std::string& name = n.*field;
  if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  if (n.lhs) collect_names(*n.lhs, field, out);
  if (n.rhs) collect_names(*n.rhs, field, out);
}

}  // namespace

Expr::Expr() : root_(make_leaf_int(0, 1)), text_("0") {}

Expr Expr::parse(std::string_view text) {
  Expr e;
  e.root_ = Parser(text).parse_all();
  e.text_ = std::string(text);
  return e;
}

Expr Expr::constant(int64_t value) {
  Expr e;
  e.root_ = make_leaf_int(value, 1);
  e.text_ = std::to_string(value);
  return e;
}

ExprValue Expr::eval(const ShapeLookup& shapes, const ScalarLookup& scalars) const {
  return eval_node(*root_, shapes, scalars);
}

int64_t Expr::eval_int(const ShapeLookup& shapes, const ScalarLookup& scalars) const {
  ExprValue v = eval(shapes, scalars);
  if (!v.is_int) throw ExprError(fmt::format("'{}' is not an integer (it uses a decimal number)", text_), 0);
  return v.i;
}

std::vector<std::string> Expr::tensor_names() const {
  std::vector<std::string> out;
  collect_names(*root_, &Node::tensor, out);
  return out;
}

std::vector<std::string> Expr::scalar_names() const {
  std::vector<std::string> out;
  collect_names(*root_, &Node::scalar, out);
  return out;
}

}  // namespace kagent
