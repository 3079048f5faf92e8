// An exact replay: a recorded search run (its candidates in the order they
// were made, where each came from, what each reused) that a replay with the
// same strategy and seed follows candidate by candidate, so that it grows the
// same tree, and says where and why it left it if it must.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kevo {

class Store;

struct RecordedCandidate {
  int64_t id = 0;
  std::string source_hash, knobs_json, family, synthesizer;
  std::vector<size_t> parents;  // ordinals (0-based) of its parents in the run, sorted
  std::optional<int64_t> reuses_evaluation;  // answered from an earlier run's measurement
  bool measured = false;  // has a result (a kill may leave the last ones without)
};

struct ReplayScript {
  int64_t run = 0;
  std::string kevo_version;  // of the recording
  std::string stop_reason;   // why the recording stopped ("" when unknown)
  std::vector<RecordedCandidate> candidates;
};

// Run `run`'s candidates as a replay follows them.
ReplayScript load_replay_script(Store& store, int64_t run);

// "swiglu_stream {"PF":1024} from mcts:mutate <- 3, 5" (ordinals 1-based),
// for saying where a replay left its recording.
std::string describe_candidate(const std::string& family, const std::string& knobs_json,
                               const std::string& synthesizer, const std::vector<size_t>& parents);

}  // namespace kevo
