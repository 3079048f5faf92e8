#include "core/expr.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace kevo {

struct Expr::Node {
  enum Kind { literal, name, unary, binary } kind;
  int64_t value = 0;
  std::string op;  // for unary and binary, or the name
  int slot = -1;   // for names: the index in the known names
  int height = 1;  // of the tree below and including this node
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;

// Parsing, evaluating and freeing an expression recurse over its tree: a
// kernel's `@kevo require` line (an LLM may have written it) nested or
// chained deeper than this is refused, rather than exhausting the stack.
constexpr int kMaxDepth = 128;

struct Token {
  enum Kind { number, ident, op, end } kind;
  std::string text;
  int64_t value = 0;
  int column = 0;
};

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    int col = static_cast<int>(i) + 1;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      int64_t v = 0;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[j] - '0', &v))
          throw ExprError("integer literal too large", col);
        ++j;
      }
      if (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_'))
        throw ExprError(fmt::format("bad number '{}'", s.substr(i, j - i + 1)), col);
      out.push_back({Token::number, std::string(s.substr(i, j - i)), v, col});
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::ident, std::string(s.substr(i, j - i)), 0, col});
      i = j;
    } else {
      static const char* two[] = {"<=", ">=", "==", "!=", "&&", "||"};
      size_t len = 0;
      for (const char* t : two)
        if (s.substr(i, 2) == t) len = 2;
      if (len == 0) {
        if (std::string_view("+-*/%<>!()").find(c) == std::string_view::npos)
          throw ExprError(fmt::format("unexpected character '{}'", c), col);
        len = 1;
      }
      out.push_back({Token::op, std::string(s.substr(i, len)), 0, col});
      i += len;
    }
  }
  out.push_back({Token::end, "", 0, static_cast<int>(s.size()) + 1});
  return out;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::vector<std::string>& known,
         std::vector<std::string>& names)
      : t_(std::move(tokens)), known_(known), names_(names) {}

  NodePtr parse() {
    NodePtr n = parse_or();
    if (peek().kind != Token::end)
      throw ExprError(fmt::format("unexpected '{}'", peek().text), peek().column);
    return n;
  }

 private:
  const Token& peek() const { return t_[pos_]; }
  // The operator's column when the next token is `op` (and consumes it), else 0.
  int accept(std::string_view op) {
    if (peek().kind == Token::op && peek().text == op) return t_[pos_++].column;
    return 0;
  }
  static void check_height(const Expr::Node& n, int column) {
    if (n.height > kMaxDepth)
      throw ExprError(fmt::format("expression nested or chained more than {} deep", kMaxDepth),
                      column);
  }
  // Entering a parenthesis or a prefix operator, at `column`: one level deeper.
  struct Deeper {
    Deeper(int& depth, int column) : depth_(depth) {
      if (++depth_ > kMaxDepth)
        throw ExprError(fmt::format("expression nested more than {} deep", kMaxDepth), column);
    }
    ~Deeper() { --depth_; }
    int& depth_;
  };
  static NodePtr binary(std::string op, NodePtr l, NodePtr r, int column) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = Expr::Node::binary;
    n->op = std::move(op);
    n->height = 1 + std::max(l->height, r->height);
    n->lhs = std::move(l);
    n->rhs = std::move(r);
    check_height(*n, column);
    return n;
  }
  NodePtr parse_or() {
    NodePtr l = parse_and();
    while (int c = accept("||")) l = binary("||", l, parse_and(), c);
    return l;
  }
  NodePtr parse_and() {
    NodePtr l = parse_cmp();
    while (int c = accept("&&")) l = binary("&&", l, parse_cmp(), c);
    return l;
  }
  NodePtr parse_cmp() {
    NodePtr l = parse_add();
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (int c = accept(op)) {
        NodePtr r = parse_add();
        for (const char* op2 : {"<=", ">=", "==", "!=", "<", ">"})
          if (peek().kind == Token::op && peek().text == op2)
            throw ExprError("chained comparison: use && between comparisons", peek().column);
        return binary(op, l, r, c);
      }
    }
    return l;
  }
  NodePtr parse_add() {
    NodePtr l = parse_mul();
    for (;;) {
      if (int c = accept("+")) l = binary("+", l, parse_mul(), c);
      else if (int c = accept("-")) l = binary("-", l, parse_mul(), c);
      else return l;
    }
  }
  NodePtr parse_mul() {
    NodePtr l = parse_unary();
    for (;;) {
      if (int c = accept("*")) l = binary("*", l, parse_unary(), c);
      else if (int c = accept("/")) l = binary("/", l, parse_unary(), c);
      else if (int c = accept("%")) l = binary("%", l, parse_unary(), c);
      else return l;
    }
  }
  NodePtr parse_unary() {
    for (std::string_view op : {"!", "-", "+"}) {
      if (int c = accept(op)) {
        Deeper deeper(depth_, c);
        auto n = std::make_shared<Expr::Node>();
        n->kind = Expr::Node::unary;
        n->op = std::string(op);
        n->lhs = parse_unary();
        n->height = 1 + n->lhs->height;
        check_height(*n, c);
        return n;
      }
    }
    return parse_primary();
  }
  NodePtr parse_primary() {
    const Token& tok = peek();
    auto n = std::make_shared<Expr::Node>();
    if (tok.kind == Token::number) {
      ++pos_;
      n->kind = Expr::Node::literal;
      n->value = tok.value;
      return n;
    }
    if (tok.kind == Token::ident) {
      if (std::find(known_.begin(), known_.end(), tok.text) == known_.end()) {
        std::string list;
        for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
        throw ExprError(fmt::format("unknown name '{}' (known: {})", tok.text,
                                    list.empty() ? "none" : list),
                        tok.column);
      }
      ++pos_;
      if (std::find(names_.begin(), names_.end(), tok.text) == names_.end())
        names_.push_back(tok.text);
      n->kind = Expr::Node::name;
      n->op = tok.text;
      n->slot = static_cast<int>(std::find(known_.begin(), known_.end(), tok.text) - known_.begin());
      return n;
    }
    if (int c = accept("(")) {
      Deeper deeper(depth_, c);
      NodePtr inner = parse_or();
      if (!accept(")"))
        throw ExprError(peek().kind == Token::end ? "missing ')'"
                                                  : fmt::format("expected ')', got '{}'", peek().text),
                        peek().column);
      return inner;
    }
    if (tok.kind == Token::end) throw ExprError("unexpected end of expression", tok.column);
    throw ExprError(fmt::format("unexpected '{}'", tok.text), tok.column);
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;  // parentheses and prefix operators open around the parser
  const std::vector<std::string>& known_;
  std::vector<std::string>& names_;
};

template <class Resolve>
std::optional<int64_t> eval(const Expr::Node& n, const Resolve& lookup) {
  switch (n.kind) {
    case Expr::Node::literal: return n.value;
    case Expr::Node::name: return lookup(n);
    case Expr::Node::unary: {
      auto v = eval(*n.lhs, lookup);
      if (!v) return std::nullopt;
      if (n.op == "!") return *v == 0 ? 1 : 0;
      if (n.op == "+") return *v;
      int64_t r;
      if (__builtin_sub_overflow(int64_t{0}, *v, &r)) return std::nullopt;
      return r;
    }
    case Expr::Node::binary: {
      auto l = eval(*n.lhs, lookup);
      if (!l) return std::nullopt;
      // && and || short-circuit, so `B != 0 && A / B > 2` is safe.
      if (n.op == "&&") {
        if (*l == 0) return 0;
        auto r = eval(*n.rhs, lookup);
        if (!r) return std::nullopt;
        return *r != 0 ? 1 : 0;
      }
      if (n.op == "||") {
        if (*l != 0) return 1;
        auto r = eval(*n.rhs, lookup);
        if (!r) return std::nullopt;
        return *r != 0 ? 1 : 0;
      }
      auto r = eval(*n.rhs, lookup);
      if (!r) return std::nullopt;
      int64_t a = *l, b = *r, out;
      const std::string& op = n.op;
      if (op == "+") return __builtin_add_overflow(a, b, &out) ? std::nullopt : std::optional(out);
      if (op == "-") return __builtin_sub_overflow(a, b, &out) ? std::nullopt : std::optional(out);
      if (op == "*") return __builtin_mul_overflow(a, b, &out) ? std::nullopt : std::optional(out);
      if (op == "/" || op == "%") {
        if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
        return op == "/" ? a / b : a % b;
      }
      if (op == "<") return a < b;
      if (op == "<=") return a <= b;
      if (op == ">") return a > b;
      if (op == ">=") return a >= b;
      if (op == "==") return a == b;
      if (op == "!=") return a != b;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

Expr Expr::parse(std::string_view text, const std::vector<std::string>& known_names) {
  Expr e;
  e.text_ = std::string(text);
  Parser p(tokenize(text), known_names, e.names_);
  e.root_ = p.parse();
  return e;
}

std::optional<int64_t> Expr::evaluate(const int64_t* values) const {
  return eval(*root_, [&](const Node& n) { return values[n.slot]; });
}

}  // namespace kevo
