// What each target is, as data every layer may read without building the
// target or its toolchain: its entry point and plain-kernel entry kind, its
// languages and their file extensions, the static check's rules and the
// LLM's rules for its code, how its compiler's report names spills and
// registers. The one place generic code learns a target's particulars; no
// other code outside targets/ compares a target's name (tests/core/layering_test.cpp).
// A leaf library (kevo_target_traits): core and every layer above may use it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kevo {

// A use the static check refuses in a target's candidates: `names` is a
// regex alternation of identifiers, `what` says what they reach.
struct BannedUse {
  const char* what;
  const char* names;
};

struct TargetLanguage {
  const char* name;       // "c", "cpp", "cuda": CandidateSource::language
  const char* extension;  // the extension a candidate of it is written with
};

struct TargetTraits {
  const char* name;         // "cpu", "cuda", ...
  const char* description;  // one line for `kevo targets`
  const char* entry_point;  // the ABI entry point a candidate defines
  // A plain kernel (a task's "entry"): the kind of function it names, and
  // whether kevo launches it with a grid and a block of its own.
  const char* plain_entry_kind;
  bool plain_entry_launches;
  std::vector<TargetLanguage> languages;  // the first is the default
  // Uses the static check refuses in this target's code, beyond what every
  // target's code is refused (processes, files, network, environment).
  std::vector<BannedUse> banned;
  const char* llm_rules;  // the lines the LLM's prompt adds for this target ("- ...")
  // The compiler's report: the metric of bytes spilled to memory and the
  // tool that reports it (for the diagnosis), the metric of registers used;
  // "" where the compiler reports none.
  const char* spill_metric;
  const char* spill_reporter;
  const char* register_metric;
  const char* compute_api;  // T4 exports' metadata.compute_api; "" when none applies
  // Whether its runner hands over the outputs of its last timing sample
  // (poisoned before it) for a check: kevo then requires that check.
  bool checks_timed_calls;
  // Whether its runner waits for kevo's "go" before the samples, so that
  // kevo's own clock brackets them (runner::JobLoop::timing_go).
  bool host_clocked_timing;
  // Whether its runner can time from a clean cache (a task's timing.l2
  // "clean": the flush reads instead of writing).
  bool clean_l2_timing;
  // How its sources are written, for the static check: "c" (C, C++, CUDA:
  // // and /* */ comments) or "python" (# comments, its own rules).
  const char* syntax = "c";
  // What the LLM's prompt says of knobs and quotes as the contract: nullptr
  // for C's (-D defines; targets/abi/kevo_kernel.h); else the text, and the
  // contract's file under KEVO_HOME.
  const char* llm_knob_syntax = nullptr;
  const char* llm_contract = nullptr;
  // Python targets: the modules a candidate may import (an ECMAScript regex
  // matched against the whole dotted name) and the same in words.
  const char* python_imports = nullptr;
  const char* python_imports_doc = nullptr;
};

// Every target kevo knows, built or not, in the order `kevo targets` lists them.
const std::vector<TargetTraits>& all_target_traits();
// The target of that name, or nullptr.
const TargetTraits* find_target_traits(std::string_view name);
// A task's target when its config names none.
std::string_view default_target();
// The target whose languages include `language`, or nullptr.
const TargetTraits* traits_of_language(std::string_view language);
// The extension a candidate in `language` is written with (".cpp" when no
// target names the language).
std::string source_extension(std::string_view language);

}  // namespace kevo
