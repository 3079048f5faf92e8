#include "search/replay.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/store.h"

namespace kevo {

ReplayScript load_replay_script(Store& store, int64_t run) {
  ReplayScript s;
  s.run = run;
  const std::optional<RunRecord> r = store.run(run);
  if (!r) throw UserError(fmt::format("--replay: no run {} in {}", run, store.path().string()));
  s.kevo_version = r->kevo_version;
  if (const nlohmann::json j = r->summary(); j.is_object() && j.contains("stop_reason") &&
                                             j["stop_reason"].is_string())
    s.stop_reason = j["stop_reason"].get<std::string>();
  std::map<int64_t, size_t> ordinal;
  for (const CandidateRecord& c : store.candidates(run)) {
    ordinal[c.id] = s.candidates.size();
    RecordedCandidate rc;
    rc.id = c.id;
    rc.source_hash = c.source_hash;
    rc.knobs_json = c.knobs_json;
    rc.family = c.family;
    rc.synthesizer = c.synthesizer;
    rc.reuses_evaluation = c.reuses_evaluation;
    rc.measured = c.result_evaluation.has_value();
    s.candidates.push_back(std::move(rc));
  }
  for (const auto& [child, parent] : store.lineage(run)) {
    auto c = ordinal.find(child), p = ordinal.find(parent);
    if (c == ordinal.end() || p == ordinal.end()) continue;  // a parent in another run
    s.candidates[c->second].parents.push_back(p->second);
  }
  for (auto& c : s.candidates) std::sort(c.parents.begin(), c.parents.end());
  return s;
}

std::string describe_candidate(const std::string& family, const std::string& knobs_json,
                               const std::string& synthesizer, const std::vector<size_t>& parents) {
  std::vector<size_t> one_based;
  for (size_t p : parents) one_based.push_back(p + 1);
  return fmt::format("{} {} from {}{}", family, knobs_json, synthesizer,
                     one_based.empty() ? "" : fmt::format(" <- {}", fmt::join(one_based, ", ")));
}

}  // namespace kevo
