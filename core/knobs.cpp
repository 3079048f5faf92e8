#include "core/knobs.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kevo {

namespace {

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

// A task dimension as a start line names it: DIM_<tensor>_<d>.
bool is_dimension_name(std::string_view name) { return name.size() > 4 && name.rfind("DIM_", 0) == 0; }

// The longest line that may hold a @kevo directive.
constexpr size_t kMaxDirectiveLine = 4096;

bool parse_int(std::string_view s, int64_t& out) {
  std::string t = trim(s);
  if (t.empty()) return false;
  const char* b = t.data();
  const char* e = t.data() + t.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

}  // namespace

KnobStart KnobSpace::parse_start(const KnobSpace& space, const std::string& text, int line,
                                 std::string_view origin) {
  auto fail = [&](const std::string& what) {
    return UserError(fmt::format("{}:{}: in '@kevo start {}': {}", origin, line, text, what));
  };
  static const std::regex assign_re(R"(^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)\s*(.*?)\s*$)");
  static const std::regex ident_re(R"([A-Za-z_][A-Za-z0-9_]*)");
  KnobStart s;
  s.text = text;
  s.line = line;
  // Every DIM_ name and device fact of the line, in first-use order: the
  // slots after the knobs and builtins.
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ident_re);
       it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    if ((is_dimension_name(name) || start_fact_meaning(name)) && !space.find(name) &&
        std::find(s.reads.begin(), s.reads.end(), name) == s.reads.end())
      s.reads.push_back(name);
  }
  std::vector<std::string> names = space.slot_names();
  names.insert(names.end(), s.reads.begin(), s.reads.end());
  size_t p = 0;
  while (p <= text.size()) {
    size_t comma = text.find(',', p);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(p, comma - p);
    p = comma + 1;
    std::smatch m;
    if (!std::regex_match(item, m, assign_re) || m[2].length() == 0)
      throw fail(fmt::format("'{}' is not NAME = EXPRESSION", trim(item)));
    const std::string knob = m[1];
    if (!space.find(knob)) throw fail(fmt::format("'{}' is not a knob of this kernel", knob));
    for (const auto& [k, e] : s.assign)
      if (k == knob) throw fail(fmt::format("knob {} is set twice", knob));
    try {
      s.assign.emplace_back(knob, Expr::parse(m[2].str(), names));
    } catch (const ExprError& e) {
      throw fail(fmt::format("{} = {}: at column {}: {} (an expression reads knobs, builtins, "
                             "the task's dimensions DIM_<tensor>_<d> and {})",
                             knob, m[2].str(), e.column(), e.what(), start_fact_list()));
    }
  }
  return s;
}

std::optional<KnobValues> KnobSpace::start_point(const KnobStart& s,
                                                 const std::map<std::string, int64_t>& values,
                                                 std::string_view origin, std::string* why) const {
  std::vector<int64_t> slots = builtin_slots();
  KnobValues v = defaults();
  for (size_t i = 0; i < knobs_.size(); ++i) slots[i] = knobs_[i].default_value;
  // A dimension the task lacks is the family's error (every shape of the
  // task has the same tensors); a fact the target did not give is not.
  for (const std::string& d : s.reads) {
    if (!is_dimension_name(d) || values.count(d)) continue;
    std::vector<std::string> known;
    for (const auto& [name, size] : values)
      if (is_dimension_name(name)) known.push_back(name);
    throw UserError(fmt::format("{}:{}: '@kevo start {}' reads {}, which this task does not have "
                                "(it has: {})",
                                origin, s.line, s.text, d,
                                known.empty() ? "no dimensions" : fmt::format("{}", fmt::join(known, ", "))));
  }
  for (const std::string& d : s.reads) {
    auto it = values.find(d);
    if (it == values.end()) {
      if (why)
        *why = fmt::format("{} ({}) is not known here: the target gives it when kevo runs on the device",
                           d, start_fact_meaning(d).value_or(""));
      return std::nullopt;
    }
    slots.push_back(it->second);
  }
  for (const auto& [knob, expr] : s.assign) {
    auto value = expr.evaluate(slots.data());
    if (!value) {
      if (why) *why = fmt::format("{} = {} cannot be computed (overflow or division by zero)", knob, expr.text());
      return std::nullopt;
    }
    size_t slot = 0;
    while (knobs_[slot].name != knob) ++slot;
    const KnobDecl& k = knobs_[slot];
    int64_t best = k.values.front();
    for (int64_t c : k.values) {
      const auto dist = [&](int64_t x) {
        const __int128 d = static_cast<__int128>(x) - *value;
        return d < 0 ? -d : d;
      };
      if (dist(c) < dist(best) || (dist(c) == dist(best) && c < best)) best = c;
    }
    slots[slot] = best;
    v[knob] = best;
  }
  if (auto bad = violation(v)) {
    if (why) *why = fmt::format("{} breaks 'require {}'", knobs_to_string(v), *bad);
    return std::nullopt;
  }
  return v;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

int online_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

const std::vector<std::pair<std::string, std::string>>& KnobSpace::start_fact_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"SMS", "the GPU's streaming multiprocessors"}};
  return names;
}

std::optional<std::string> KnobSpace::start_fact_meaning(std::string_view name) {
  for (const auto& [fact, meaning] : start_fact_names())
    if (fact == name) return meaning;
  return std::nullopt;
}

std::string KnobSpace::start_fact_list() {
  std::vector<std::string> names;
  for (const auto& [fact, meaning] : start_fact_names()) names.push_back(fact);
  return fmt::format("{}", fmt::join(names, ", "));
}

const std::vector<std::string>& KnobSpace::builtin_names() {
  static const std::vector<std::string> names = {"NCPU"};
  return names;
}

int64_t KnobSpace::builtin_value(std::string_view name) {
  if (name == "NCPU") return online_cpus();
  KEVO_ASSERT(false);
}

KnobSpace KnobSpace::parse_source(std::string_view source, std::string_view origin, Defaults defaults) {
  // A directive is a comment line ("//", "#", "*" or "/*" first) whose text
  // starts with @kevo.
  static const std::regex directive(R"(^\s*(?://+|#+|/?\*+)\s*@kevo\s+(\S+)\s*(.*?)\s*(?:\*/)?\s*$)");
  static const std::regex knob_re(R"(^([A-Za-z_][A-Za-z0-9_]*)\s+(\S+)\s*\{([^}]*)\}\s*$)");
  KnobSpace space;
  std::vector<std::pair<std::string, int>> requires_;
  std::vector<std::pair<std::string, int>> starts;
  int line_no = 0;
  size_t pos = 0;
  auto fail = [&](const std::string& what) -> UserError {
    return UserError(fmt::format("{}:{}: {}", origin, line_no, what));
  };
  while (pos <= source.size()) {
    size_t eol = source.find('\n', pos);
    if (eol == std::string_view::npos) eol = source.size();
    std::string line(source.substr(pos, eol - pos));
    pos = eol + 1;
    ++line_no;
    if (line.find("@kevo") == std::string::npos) continue;
    // std::regex recurses per character: a longer line (an LLM may have
    // written the source) could exhaust the stack. No declaration needs it.
    if (line.size() > kMaxDirectiveLine)
      throw fail(fmt::format("a line with @kevo of {} characters (at most {})", line.size(),
                             kMaxDirectiveLine));
    std::smatch m;
    if (!std::regex_match(line, m, directive)) continue;
    std::string kind = m[1];
    std::string rest = m[2];
    if (kind == "knob") {
      std::smatch k;
      if (!std::regex_match(rest, k, knob_re))
        throw fail(fmt::format("malformed knob declaration '{}' (expected: @kevo knob NAME "
                               "DEFAULT {{v1, v2, ...}})",
                               rest));
      KnobDecl decl;
      decl.name = k[1];
      decl.line = line_no;
      if (space.find(decl.name)) throw fail(fmt::format("knob '{}' declared twice", decl.name));
      const auto& builtins = builtin_names();
      if (std::find(builtins.begin(), builtins.end(), decl.name) != builtins.end())
        throw fail(fmt::format("'{}' is a builtin name and cannot be a knob", decl.name));
      if (!parse_int(k[2].str(), decl.default_value))
        throw fail(fmt::format("knob {}: default '{}' is not an integer", decl.name, k[2].str()));
      std::string list = k[3];
      size_t p = 0;
      while (p <= list.size()) {
        size_t comma = list.find(',', p);
        if (comma == std::string::npos) comma = list.size();
        std::string item = trim(std::string_view(list).substr(p, comma - p));
        p = comma + 1;
        if (item.empty())
          throw fail(trim(list).empty()
                         ? fmt::format("knob {}: no values in {{}}", decl.name)
                         : fmt::format("knob {}: empty value in {{{}}}", decl.name, list));
        int64_t v;
        if (!parse_int(item, v))
          throw fail(fmt::format("knob {}: value '{}' is not an integer", decl.name, item));
        if (std::find(decl.values.begin(), decl.values.end(), v) != decl.values.end())
          throw fail(fmt::format("knob {}: value {} listed twice", decl.name, v));
        decl.values.push_back(v);
        if (decl.values.size() > kMaxKnobValues)
          throw fail(fmt::format("knob {}: more than {} values", decl.name, kMaxKnobValues));
      }
      if (std::find(decl.values.begin(), decl.values.end(), decl.default_value) ==
          decl.values.end())
        throw fail(fmt::format("knob {}: default {} is not among its values {{{}}}", decl.name,
                               decl.default_value, trim(list)));
      space.knobs_.push_back(std::move(decl));
    } else if (kind == "require") {
      if (rest.empty()) throw fail("empty @kevo require");
      requires_.emplace_back(rest, line_no);
    } else if (kind == "start") {
      if (rest.empty()) throw fail("empty @kevo start (expected: @kevo start NAME = EXPR, ...)");
      starts.emplace_back(rest, line_no);
    } else {
      throw fail(fmt::format("unknown @kevo directive '{}' (expected knob, require or start)", kind));
    }
  }
  // Constraints may name knobs declared after them, so parse them last.
  const std::vector<std::string> names = space.slot_names();
  for (const auto& [text, line] : requires_) {
    try {
      space.constraints_.push_back({Expr::parse(text, names), line});
    } catch (const ExprError& e) {
      throw UserError(fmt::format("{}:{}: in '@kevo require {}' at column {}: {}", origin, line,
                                  text, e.column(), e.what()));
    }
  }
  for (const auto& [text, line] : starts) space.starts_.push_back(parse_start(space, text, line, origin));
  KnobValues d = space.defaults();
  if (auto bad = space.violation(d)) {
    if (defaults == Defaults::declared)
      throw UserError(fmt::format("{}: the default knob values ({}) violate 'require {}'", origin,
                                  knobs_to_string(d), *bad));
    std::optional<KnobValues> first;
    space.for_each_valid([&](const KnobValues& v) {
      first = v;
      return false;
    });
    if (!first)
      throw UserError(fmt::format("{}: no point satisfies every restriction (the first listed values "
                                  "{} violate '{}')",
                                  origin, knobs_to_string(d), *bad));
    for (auto& k : space.knobs_) k.default_value = first->at(k.name);
    space.default_note_ = fmt::format(
        "the first listed values ({}) violate '{}': the default point is the first valid one in "
        "enumeration order ({})",
        knobs_to_string(d), *bad, knobs_to_string(*first));
  }
  return space;
}

const KnobDecl* KnobSpace::find(std::string_view name) const {
  for (const auto& k : knobs_)
    if (k.name == name) return &k;
  return nullptr;
}

void KnobSpace::set_defaults(const KnobValues& v) {
  if (auto bad = violation(v)) throw UserError(fmt::format("not a valid point ({}): {}", knobs_to_string(v), *bad));
  for (auto& k : knobs_) k.default_value = v.at(k.name);
}

KnobValues KnobSpace::defaults() const {
  KnobValues v;
  for (const auto& k : knobs_) v[k.name] = k.default_value;
  return v;
}

std::optional<std::string> KnobSpace::violation(const KnobValues& v) const {
  for (const auto& k : knobs_) {
    auto it = v.find(k.name);
    if (it == v.end()) return fmt::format("{} has no value", k.name);
    if (std::find(k.values.begin(), k.values.end(), it->second) == k.values.end())
      return fmt::format("{} = {} is not one of its values", k.name, it->second);
  }
  std::vector<int64_t> slots = builtin_slots();
  for (size_t i = 0; i < knobs_.size(); ++i) slots[i] = v.at(knobs_[i].name);
  const KnobConstraint* bad = first_violated(slots.data());
  return bad ? std::optional<std::string>(bad->expr.text()) : std::nullopt;
}

std::vector<std::string> KnobSpace::slot_names() const {
  std::vector<std::string> names;
  for (const auto& k : knobs_) names.push_back(k.name);
  for (const auto& b : builtin_names()) names.push_back(b);
  return names;
}

KnobSpace KnobSpace::with_require(std::string_view text) const {
  KnobSpace s = *this;
  s.constraints_.push_back({Expr::parse(text, slot_names()), 0});
  return s;
}

std::vector<int64_t> KnobSpace::builtin_slots() const {
  std::vector<int64_t> slots(knobs_.size() + builtin_names().size());
  for (size_t b = 0; b < builtin_names().size(); ++b)
    slots[knobs_.size() + b] = builtin_value(builtin_names()[b]);
  return slots;
}

const KnobConstraint* KnobSpace::first_violated(const int64_t* slots) const {
  for (const auto& c : constraints_) {
    auto r = c.expr.evaluate(slots);
    if (!r || *r == 0) return &c;
  }
  return nullptr;
}

KnobValues KnobSpace::resolve(
    const std::vector<std::pair<std::string, int64_t>>& overrides) const {
  KnobValues v = defaults();
  for (const auto& [name, value] : overrides) {
    const KnobDecl* k = find(name);
    if (!k) {
      std::string known;
      for (const auto& d : knobs_) known += (known.empty() ? "" : ", ") + d.name;
      throw UserError(fmt::format("unknown knob '{}' (this kernel declares: {})", name,
                                  known.empty() ? "no knobs" : known));
    }
    if (std::find(k->values.begin(), k->values.end(), value) == k->values.end())
      throw UserError(fmt::format("knob {}={} is not one of its values {{{}}}", name, value,
                                  fmt::join(k->values, ", ")));
    v[name] = value;
  }
  if (auto bad = violation(v))
    throw UserError(fmt::format("knob values {} violate 'require {}'", knobs_to_string(v), *bad));
  return v;
}

void KnobSpace::restrict(std::string_view name, const std::vector<int64_t>& values) {
  for (auto& k : knobs_) {
    if (k.name != name) continue;
    std::vector<int64_t> kept;
    for (int64_t v : k.values)
      if (std::find(values.begin(), values.end(), v) != values.end()) kept.push_back(v);
    if (kept.empty())
      throw UserError(fmt::format("restricting knob {} to {{{}}} leaves no value (declared: {{{}}})",
                                  name, fmt::join(values, ", "), fmt::join(k.values, ", ")));
    k.values = kept;
    if (std::find(kept.begin(), kept.end(), k.default_value) == kept.end())
      k.default_value = kept.front();
    return;
  }
  throw UserError(fmt::format("cannot restrict unknown knob '{}'", name));
}

uint64_t KnobSpace::size_unconstrained() const {
  uint64_t n = 1;
  for (const auto& k : knobs_)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(k.values.size()), &n)) return UINT64_MAX;
  return n;
}

void KnobSpace::for_each_valid(const std::function<bool(const KnobValues&)>& visit) const {
  // Values by slot (knobs in declaration order, then builtins), as the
  // constraints were parsed: no name lookups per point. The points come in
  // mixed-radix order (last knob fastest), as a plain count would give them,
  // but depth first: each constraint is checked once the last knob it reads
  // has its value, and a value that breaks one skips every point below it.
  // (wgmma's 191 million combinations hold 110 thousand valid points; the
  // plain count took minutes.)
  const size_t n = knobs_.size();
  std::vector<int64_t> slots = builtin_slots();
  KnobValues v;
  for (size_t i = 0; i < n; ++i) {
    slots[i] = knobs_[i].values[0];
    v[knobs_[i].name] = slots[i];
  }
  std::vector<int64_t*> in_map(n);
  for (size_t i = 0; i < n; ++i) in_map[i] = &v[knobs_[i].name];
  // at[d]: the constraints whose last knob read is knob d - 1 (at[0]: those
  // that read no knob at all)
  std::vector<std::vector<const Expr*>> at(n + 1);
  for (const auto& c : constraints_) {
    size_t depth = 0;
    for (const auto& name : c.expr.names())
      for (size_t i = 0; i < n; ++i)
        if (knobs_[i].name == name) depth = std::max(depth, i + 1);
    at[depth].push_back(&c.expr);
  }
  const auto holds = [&](size_t depth) {
    for (const Expr* e : at[depth]) {
      auto r = e->evaluate(slots.data());
      if (!r || *r == 0) return false;
    }
    return true;
  };
  if (!holds(0)) return;
  if (n == 0) {
    visit(v);
    return;
  }
  // idx[i]: the value index of knob i; knobs 0..depth-1 are set and hold.
  std::vector<size_t> idx(n, 0);
  size_t depth = 0;  // the knob being set
  for (;;) {
    const auto& k = knobs_[depth];
    if (idx[depth] == k.values.size()) {  // this knob's values are spent: back up
      idx[depth] = 0;
      if (depth == 0) return;
      ++idx[--depth];
      continue;
    }
    slots[depth] = *in_map[depth] = k.values[idx[depth]];
    if (!holds(depth + 1)) {
      ++idx[depth];
      continue;
    }
    if (depth + 1 < n) {
      ++depth;
      continue;
    }
    if (!visit(v)) return;
    ++idx[depth];
  }
}

std::vector<KnobValues> KnobSpace::enumerate_valid(size_t limit) const {
  std::vector<KnobValues> out;
  if (limit == 0) return out;
  for_each_valid([&](const KnobValues& v) {
    out.push_back(v);
    return out.size() < limit;
  });
  return out;
}

std::string knobs_to_json(const KnobValues& v) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, x] : v) j[k] = x;
  return j.dump();
}

KnobValues knobs_from_json(std::string_view text) {
  KnobValues v;
  auto j = nlohmann::json::parse(text);
  for (auto it = j.begin(); it != j.end(); ++it) v[it.key()] = it.value().get<int64_t>();
  return v;
}

std::string knobs_to_string(const KnobValues& v) {
  std::string s;
  for (const auto& [k, x] : v) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, x);
  return s.empty() ? "(no knobs)" : s;
}

std::pair<std::string, int64_t> parse_knob_assignment(std::string_view text) {
  size_t eq = text.find('=');
  int64_t value;
  if (eq == std::string_view::npos || !is_identifier(trim(text.substr(0, eq))) ||
      !parse_int(text.substr(eq + 1), value))
    throw UserError(fmt::format("bad knob '{}' (expected NAME=INTEGER, e.g. BLOCK=256)", text));
  return {trim(text.substr(0, eq)), value};
}

}  // namespace kevo
