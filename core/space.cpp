#include "core/space.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/kernel_headers.h"
#include "core/log.h"
#include "core/paths.h"

namespace kevo {

namespace {

// Value index of knob `name` in `p`, or -1 when the family has no such knob.
int value_index(const KnobSpace& space, const KnobValues& knobs, std::string_view name) {
  const KnobDecl* d = space.find(name);
  if (!d) return -1;
  auto it = knobs.find(d->name);
  if (it == knobs.end()) return -1;
  auto pos = std::find(d->values.begin(), d->values.end(), it->second);
  return pos == d->values.end() ? -1 : static_cast<int>(pos - d->values.begin());
}

int first_index(const KnobSpace& space, const KnobValues& knobs,
                std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (int i = value_index(space, knobs, n); i >= 0) return i + 1;
  return 0;
}

}  // namespace

int SearchSpace::find_family(std::string_view name) const {
  for (size_t i = 0; i < families_.size(); ++i)
    if (families_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> SearchSpace::seed_order() const {
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t f = 0; f < families_.size(); ++f)
      if ((families_[f].name == "naive") == (pass == 1)) order.push_back(static_cast<int>(f));
  return order;
}

bool SearchSpace::valid(const Point& p) const {
  if (p.family < 0 || static_cast<size_t>(p.family) >= families_.size()) return false;
  const KnobSpace& s = families_[p.family].space;
  if (p.knobs.size() != s.knobs().size()) return false;
  if (!s.valid(p.knobs)) return false;
  return !restricted_ || allowed_.count(key(p)) > 0;
}

std::pair<uint64_t, uint64_t> SearchSpace::family_range(int f) const {
  enumerate();
  return {offsets_.at(f), offsets_.at(f + 1)};
}

std::string SearchSpace::key(const Point& p) const {
  return families_.at(p.family).source_hash + "|" + knobs_to_json(p.knobs);
}

Features SearchSpace::features(const Point& p) const {
  const KnobSpace& s = families_.at(p.family).space;
  Features f;
  f.family = p.family;
  f.vector = first_index(s, p.knobs, {"VW", "VEC", "NR"});
  f.tile = first_index(s, p.knobs, {"BLOCK", "TILE", "MR", "RB", "ROWS", "UNROLL"});
  f.threads = first_index(s, p.knobs, {"THREADS"});
  return f;
}

SearchSpace::Enumerated SearchSpace::enumerate_family(size_t f) const {
  const KnobSpace& s = families_[f].space;
  Enumerated e;
  e.knobs = s.knobs().size();
  if (e.knobs == 0) {  // one point: no knobs
    e.count = 1;
    return e;
  }
  s.for_each_valid([&](const KnobValues& v) {
    ++e.count;
    for (const KnobDecl& d : s.knobs()) {
      auto pos = std::find(d.values.begin(), d.values.end(), v.at(d.name));
      KEVO_ASSERT(pos - d.values.begin() < 256);  // kMaxKnobValues, checked when parsed
      e.index.push_back(static_cast<uint8_t>(pos - d.values.begin()));
    }
    return true;
  });
  return e;
}

void SearchSpace::enumerate() const {
  if (enumerated_) return;
  points_.clear();
  for (size_t f = 0; f < families_.size(); ++f) points_.push_back(enumerate_family(f));
  offsets_.assign(families_.size() + 1, 0);
  for (size_t f = 0; f < families_.size(); ++f) offsets_[f + 1] = offsets_[f] + points_[f].count;
  enumerated_ = true;
}

int SearchSpace::add_family(Family family) {
  for (const auto& other : families_)
    if (other.name == family.name)
      throw UserError(fmt::format("two kernel families are named '{}'", family.name));
  families_.push_back(std::move(family));
  const size_t f = families_.size() - 1;
  if (enumerated_) {
    Enumerated e = enumerate_family(f);
    if (restricted_) {  // a replay: only the points that were recorded
      Enumerated kept;
      kept.knobs = e.knobs;
      const auto& knobs = families_[f].space.knobs();
      for (uint64_t i = 0; i < e.count; ++i) {
        Point p{static_cast<int>(f), {}};
        for (size_t k = 0; k < e.knobs; ++k)
          p.knobs[knobs[k].name] = knobs[k].values[e.index[i * e.knobs + k]];
        if (!allowed_.count(key(p))) continue;
        ++kept.count;
        auto first = e.index.begin() + static_cast<ptrdiff_t>(i * e.knobs);
        kept.index.insert(kept.index.end(), first, first + static_cast<ptrdiff_t>(e.knobs));
      }
      e = std::move(kept);
    }
    points_.push_back(std::move(e));
    offsets_.push_back(offsets_.back() + points_.back().count);
  }
  return static_cast<int>(f);
}

uint64_t SearchSpace::size() const {
  enumerate();
  return offsets_.back();
}

Point SearchSpace::at(uint64_t index) const {
  enumerate();
  KEVO_ASSERT(index < offsets_.back());
  size_t f = static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), index) -
                                 offsets_.begin() - 1);
  Point p;
  p.family = static_cast<int>(f);
  const Enumerated& e = points_[f];
  const uint64_t local = index - offsets_[f];
  const auto& knobs = families_[f].space.knobs();
  for (size_t k = 0; k < e.knobs; ++k)
    p.knobs[knobs[k].name] = knobs[k].values[e.index[local * e.knobs + k]];
  return p;
}

void SearchSpace::restrict_to(const std::set<std::string>& keys) {
  enumerate();
  for (size_t f = 0; f < families_.size(); ++f) {
    Enumerated kept;
    kept.knobs = points_[f].knobs;
    for (uint64_t i = 0; i < points_[f].count; ++i) {
      if (keys.count(key(at(offsets_[f] + i))) == 0) continue;
      ++kept.count;
      auto first = points_[f].index.begin() + static_cast<ptrdiff_t>(i * kept.knobs);
      kept.index.insert(kept.index.end(), first, first + static_cast<ptrdiff_t>(kept.knobs));
    }
    points_[f] = std::move(kept);
  }
  for (size_t f = 0; f < families_.size(); ++f) offsets_[f + 1] = offsets_[f] + points_[f].count;
  restricted_ = true;
  allowed_ = keys;
}

Family make_family(std::string name, std::filesystem::path origin, std::string text,
                   std::string language, const ConfigKnobs& config) {
  Family f;
  f.name = std::move(name);
  f.origin = std::move(origin);
  f.language = std::move(language);
  // kevo's kernel headers inlined: the text hashed, stored and compiled is
  // the whole kernel (core/kernel_headers.h).
  f.text = inline_kernel_headers(text, f.language);
  f.source_hash = sha256_hex(f.text);
  f.space = KnobSpace::parse_source(f.text, f.origin.string());
  if (!config.empty()) {
    f.space = KnobSpace::parse_source(f.text + "\n" + config.declarations(f.space),
                                      f.origin.string() + " with the task's tune_params",
                                      KnobSpace::Defaults::first_valid);
    if (!f.space.default_note().empty()) log_info("family {}: {}", f.name, f.space.default_note());
  }
  return f;
}

SearchSpace load_space(const std::vector<std::filesystem::path>& files,
                       const std::map<std::string, std::vector<int64_t>>& restrictions,
                       const std::function<std::string(const std::filesystem::path&)>& language_of,
                       const ConfigKnobs& config) {
  std::vector<Family> families;
  for (const auto& file : files) {
    Family f =
        make_family(file.stem().string(), file, read_text_file(file), language_of(file), config);
    for (const auto& [name, values] : restrictions)
      if (f.space.find(name)) f.space.restrict(name, values);
    for (const auto& other : families)
      if (other.name == f.name)
        throw UserError(fmt::format("two kernel families are named '{}' ({} and {})", f.name,
                                    other.origin.string(), file.string()));
    families.push_back(std::move(f));
  }
  return SearchSpace(std::move(families));
}

}  // namespace kevo
