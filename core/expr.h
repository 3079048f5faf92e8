// A small, safe integer expression language for knob constraints:
// literals, names, + - * / %, comparisons, && || !, unary -, parentheses.
// No calls, no side effects; overflow and division by zero are errors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kevo {

// A syntax or name error, with the 1-based column where it was found.
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& what, int column) : std::runtime_error(what), column_(column) {}
  int column() const { return column_; }

 private:
  int column_;
};

class Expr {
 public:
  // Parses `text`; a name not in `known_names` is an error.
  static Expr parse(std::string_view text, const std::vector<std::string>& known_names);

  // The value with every name's value at its index in the `known_names` the
  // expression was parsed with, or nullopt on overflow or division by zero.
  std::optional<int64_t> evaluate(const int64_t* values) const;

  const std::string& text() const { return text_; }
  // The names the expression reads, in first-use order.
  const std::vector<std::string>& names() const { return names_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
  std::vector<std::string> names_;
};

}  // namespace kevo
