// libFuzzer target: a kernel source's `// @kevo knob`, `// @kevo require` and
// `// @kevo start` lines (KnobSpace::parse_source), then what kevo does with a
// parsed space: defaults, validity, enumeration of small spaces (and the
// search space's compact form of them), each start's point at a few shapes,
// the canonical JSON form, and --knob assignments. UserError (and ExprError
// from with_require) is the documented answer to a bad declaration.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/knobs.h"
#include "core/space.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  // A --knob argument is one line of text too.
  try {
    (void)kevo::parse_knob_assignment(source.substr(0, source.find('\n')));
  } catch (const kevo::UserError&) {
  }
  kevo::KnobSpace space;
  try {
    space = kevo::KnobSpace::parse_source(source, "fuzz.c");
  } catch (const kevo::UserError&) {
    return 0;
  }
  kevo::KnobValues d = space.defaults();
  if (space.violation(d)) std::abort();  // parse_source refuses such a space
  if (kevo::knobs_from_json(kevo::knobs_to_json(d)) != d) std::abort();
  (void)kevo::knobs_to_string(d);
  if (space.size_unconstrained() <= 4096) {
    auto points = space.enumerate_valid(64);
    for (const auto& p : points)
      if (!space.valid(p)) std::abort();
    // The search's compact form of the same points gives them back.
    kevo::SearchSpace search({kevo::make_family("f", "fuzz.c", std::string(source), "c")});
    for (uint64_t i = 0; i < search.size() && i < 64; ++i)
      if (search.at(i).knobs != points.at(i)) std::abort();
  }
  // A start gives a valid point or none; a dimension the shape lacks is a
  // UserError.
  for (const auto& st : space.starts()) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{100}, INT64_MAX}) {
      std::map<std::string, int64_t> dims;
      for (const auto& name : st.reads) dims[name] = n;
      std::string why;
      auto p = space.start_point(st, dims, "fuzz.c", &why);
      if (p && !space.valid(*p)) std::abort();
      if (!p && why.empty()) std::abort();
    }
    try {
      std::string why;
      (void)space.start_point(st, {}, "fuzz.c", &why);
      for (const auto& name : st.reads)
        if (name.rfind("DIM_", 0) == 0) std::abort();  // should have thrown
    } catch (const kevo::UserError&) {
    }
  }
  try {
    (void)space.resolve({});
    kevo::KnobSpace more = space.with_require(source.substr(source.rfind('\n') + 1));
    (void)more.violation(d);
  } catch (const kevo::UserError&) {
  } catch (const kevo::ExprError&) {
  }
  if (!space.knobs().empty()) {
    const auto& k = space.knobs().front();
    space.restrict(k.name, {k.values.back()});
    if (!space.find(k.name) || space.find(k.name)->values.size() != 1) std::abort();
  }
  return 0;
}
