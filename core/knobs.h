// Knob spaces: the `// @kevo knob` and `// @kevo require` declarations of a
// kernel source, their validation, and enumeration of the valid points.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/expr.h"

namespace kevo {

// One point of a knob space, ordered by name (the canonical form).
using KnobValues = std::map<std::string, int64_t>;

// The most values one knob may list: a search space keeps a point as one
// byte per knob (core/space.h).
constexpr size_t kMaxKnobValues = 256;

struct KnobDecl {
  std::string name;
  int64_t default_value = 0;
  std::vector<int64_t> values;  // in declaration order, no duplicates
  int line = 0;                 // 1-based line in the source, 0 if not from a source
};

struct KnobConstraint {
  Expr expr;
  int line = 0;
};

// A point a family proposes for the search to start from, computed from the
// task's shape: `// @kevo start NAME = EXPR, NAME = EXPR, ...`. The knobs it
// does not name keep their defaults. An expression may read the task's
// dimensions (DIM_<tensor>_<d>, as the KEVO_DIM_ defines name them), what
// the target says of its device (start_fact_names(): SMS), the builtins, and
// any knob (its value so far: the default, or an earlier assignment of the
// same line).
struct KnobStart {
  std::vector<std::pair<std::string, Expr>> assign;  // knob, expression
  // The dimensions and device facts the line reads; the expressions were
  // parsed with the space's slot names (knobs, builtins) followed by these.
  std::vector<std::string> reads;
  std::string text;  // as written
  int line = 0;
};

class KnobSpace {
 public:
  // Reads the declarations of `source`. `origin` names the file in errors.
  // Throws UserError ("FILE:LINE: ...") on a malformed declaration.
  // With `Defaults::first_valid` (knobs a task config declares, Kernel Tuner's
  // way, which has no default point), a default point that breaks a
  // constraint moves to the first valid point in enumeration order, and
  // default_note() says so; UserError only when no point is valid.
  enum class Defaults { declared, first_valid };
  static KnobSpace parse_source(std::string_view source, std::string_view origin,
                                Defaults defaults = Defaults::declared);
  // Why the default point is not the declared one; "" when it is.
  const std::string& default_note() const { return default_note_; }

  const std::vector<KnobDecl>& knobs() const { return knobs_; }
  const std::vector<KnobConstraint>& constraints() const { return constraints_; }
  const std::vector<KnobStart>& starts() const { return starts_; }
  // Start `s` at one shape: `values` gives each dimension's size by name
  // ("DIM_A_0" -> 64) and the device's facts ("SMS" -> 132). Each value
  // snaps to its knob's nearest declared value (the smaller on a tie).
  // UserError (naming `origin` and the line) when an expression reads a
  // dimension `values` lacks; nullopt, with the reason in `*why`, when it
  // reads a fact the target did not give, when a value cannot be computed
  // (overflow, division by zero) or when the point breaks a constraint.
  std::optional<KnobValues> start_point(const KnobStart& s,
                                        const std::map<std::string, int64_t>& values,
                                        std::string_view origin, std::string* why) const;
  const KnobDecl* find(std::string_view name) const;
  bool empty() const { return knobs_.empty(); }

  KnobValues defaults() const;
  // The text of the first constraint `v` violates (or cannot evaluate), or
  // nullopt when `v` is a valid point. Also checks every value is declared.
  std::optional<std::string> violation(const KnobValues& v) const;
  bool valid(const KnobValues& v) const { return !violation(v).has_value(); }

  // Defaults with `overrides` applied. Throws UserError for an unknown knob, a
  // value not in its list, or a point that violates a constraint.
  KnobValues resolve(const std::vector<std::pair<std::string, int64_t>>& overrides) const;

  // A copy with one more constraint: `text` in the require language (a
  // condition given on the command line, say). Throws ExprError for a syntax
  // error or a name that is neither a knob nor a builtin.
  KnobSpace with_require(std::string_view text) const;

  // Makes `v` (a valid point) the default point. UserError if it is not one.
  void set_defaults(const KnobValues& v);

  // Keeps only `values` of knob `name` (a task pinning THREADS, say). Throws
  // UserError when the knob is unknown or no declared value remains. The
  // default moves to the first remaining value when it was removed.
  void restrict(std::string_view name, const std::vector<int64_t>& values);

  // Points before constraints are applied (saturates at UINT64_MAX).
  uint64_t size_unconstrained() const;
  // Calls `visit` for every valid point in mixed-radix order (last knob
  // fastest) until it returns false.
  void for_each_valid(const std::function<bool(const KnobValues&)>& visit) const;
  std::vector<KnobValues> enumerate_valid(size_t limit = SIZE_MAX) const;

  // Names usable in `require` besides the knobs.
  static const std::vector<std::string>& builtin_names();
  // What a target may say of its device for `@kevo start` lines ("SMS": its
  // streaming multiprocessors), with what each means.
  static const std::vector<std::pair<std::string, std::string>>& start_fact_names();
  // What start fact `name` means; nullopt when it is not one.
  static std::optional<std::string> start_fact_meaning(std::string_view name);
  // The start facts' names, "SMS, ..." (for messages).
  static std::string start_fact_list();
  static int64_t builtin_value(std::string_view name);

 private:
  static KnobStart parse_start(const KnobSpace& space, const std::string& text, int line,
                               std::string_view origin);
  std::string default_note_;
  // The names constraints are parsed with, by slot: the knobs in declaration
  // order, then the builtins.
  std::vector<std::string> slot_names() const;
  // Values by slot: the knobs' left for the caller to fill, then the builtins.
  std::vector<int64_t> builtin_slots() const;
  const KnobConstraint* first_violated(const int64_t* slots) const;

  std::vector<KnobDecl> knobs_;
  std::vector<KnobConstraint> constraints_;
  std::vector<KnobStart> starts_;
};

// Canonical JSON object text ({"A":1,"B":2}) and back.
std::string knobs_to_json(const KnobValues& v);
KnobValues knobs_from_json(std::string_view text);
// Whether `s` is a C identifier (a knob name, a tensor name in a define).
bool is_identifier(std::string_view s);
// "A=1 B=2" for people.
std::string knobs_to_string(const KnobValues& v);
// Parses "NAME=VALUE" (a --knob argument); throws UserError.
std::pair<std::string, int64_t> parse_knob_assignment(std::string_view text);

// The number of CPUs this process may run on (the builtin NCPU).
int online_cpus();

}  // namespace kevo
