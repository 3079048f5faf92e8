// The search space of a task: its kernel families (one source each, with a
// knob space) and the points in them. A point is (family, knob values); the
// pair (source hash, canonical knobs) is what dedup and the store key on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "core/task_kernels.h"

namespace kevo {

struct Family {
  std::string name;  // the file's stem: "online", "blocked"
  std::filesystem::path origin;
  std::string text;  // the source, kevo's kernel headers inlined
  std::string language;
  std::string source_hash;  // sha256 of text, as the store keys sources
  KnobSpace space;
};

struct Point {
  int family = 0;
  KnobValues knobs;
  bool operator==(const Point& o) const { return family == o.family && knobs == o.knobs; }
  bool operator<(const Point& o) const {
    return family != o.family ? family < o.family : knobs < o.knobs;
  }
};

// Features that place a point in a MAP-Elites archive: the family and knobs
// that describe what a kernel does (vector width, tile size, threads), each
// as a small bucket index.
struct Features {
  int family = 0;
  int vector = 0;   // bucket of VW / VEC / NR
  int tile = 0;     // bucket of BLOCK / TILE / MR / RB / ROWS / UNROLL
  int threads = 0;  // bucket of THREADS
  auto operator<=>(const Features&) const = default;
};

class SearchSpace {
 public:
  SearchSpace() = default;
  explicit SearchSpace(std::vector<Family> families) : families_(std::move(families)) {}

  const std::vector<Family>& families() const { return families_; }
  const Family& family(int i) const { return families_.at(static_cast<size_t>(i)); }
  int find_family(std::string_view name) const;  // -1 when absent
  size_t size_families() const { return families_.size(); }

  // Declared values, constraints, and (when restricted) recorded.
  bool valid(const Point& p) const;
  Point seed(int family) const { return {family, families_.at(family).space.defaults()}; }
  // Makes `p` its family's seed (default point); `p` must be valid.
  void set_seed(const Point& p) { families_.at(static_cast<size_t>(p.family)).space.set_defaults(p.knobs); }
  // The families in the order a search should try their seeds: the baseline
  // family named "naive" (a reference, slow by design) last.
  std::vector<int> seed_order() const;
  // "source_hash|{"A":1}", the dedup key.
  std::string key(const Point& p) const;
  Features features(const Point& p) const;

  // Enumerated valid points (built on first use, compact: one value index
  // per knob). Global index: family by family, mixed-radix within each.
  uint64_t size() const;
  Point at(uint64_t index) const;
  // The global indexes [first, second) of family f's points.
  std::pair<uint64_t, uint64_t> family_range(int f) const;
  // Appends a family (a source written during the search) and returns its
  // index; the points of the families before it keep their indexes.
  int add_family(Family family);
  // Keeps only points whose key is in `keys` (a replay knows only what was
  // recorded). Families left without a point stay, with no points.
  void restrict_to(const std::set<std::string>& keys);

 private:
  struct Enumerated {
    size_t knobs = 0;
    uint64_t count = 0;          // points
    std::vector<uint8_t> index;  // knobs * count value indexes
  };
  void enumerate() const;
  Enumerated enumerate_family(size_t f) const;

  std::vector<Family> families_;
  mutable bool enumerated_ = false;
  mutable std::vector<Enumerated> points_;
  mutable std::vector<uint64_t> offsets_;  // first global index of each family
  bool restricted_ = false;
  std::set<std::string> allowed_;  // when restricted
};

// A family from a source text; its knobs are parsed from the text (a
// malformed declaration is a UserError naming `origin`), together with the
// task's config knobs that the text does not declare itself. The text is the
// file's own with kevo's kernel headers it includes inlined
// (core/kernel_headers.h), and its hash covers them; config knobs reach the compiler only as a point's
// -D values, so the same point under other tune_params is the same program.
Family make_family(std::string name, std::filesystem::path origin, std::string text,
                   std::string language, const ConfigKnobs& config = ConfigKnobs{});

// Loads families from `files` (kernel sources), adding the task's config knobs
// and applying its knob restrictions. Throws UserError for a bad file.
SearchSpace load_space(const std::vector<std::filesystem::path>& files,
                       const std::map<std::string, std::vector<int64_t>>& restrictions,
                       const std::function<std::string(const std::filesystem::path&)>& language_of,
                       const ConfigKnobs& config = ConfigKnobs{});

}  // namespace kevo
