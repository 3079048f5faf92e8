// The LLM synthesizer: writes new kernel sources. Each request's prompt is
// built fresh from templates (configs/prompts/) with the operator and its
// reference semantics, the kernel ABI and knob syntax, the target's rules,
// documents retrieved from the knowledge base for the parent's diagnosis,
// the parent's source, diagnosis, profile and hottest lines, the best and a
// few other candidates, and — when repairing — the error with the matching
// compiler-error entries. Every call is recorded in the store's llm_calls
// table; a recorded reply answers the same prompt again ("cache": "use"),
// and "only" forbids the network (a replay).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/store.h"
#include "synth/llm/client.h"
#include "synth/llm/config.h"

namespace kevo {

class Store;
class KnowledgeBase;

// What one request is about.
struct LlmAsk {
  enum class Mode { improve, repair, simplify };
  Mode mode = Mode::improve;
  int64_t parent = 0;           // candidate id
  std::string parent_label;     // "online VEC=8 TPR=128"
  std::string parent_source;    // the family's text with the knob values defined on top
  std::string parent_result;    // "ok: 73.2 us, 93% of the roof" / "compile_error: ..."
  std::string diagnosis;        // the roofline sentence and the profile's bottleneck
  std::vector<std::string> profile;    // "ncu.dram_pct = 91.2 %"
  std::vector<std::string> hot_lines;  // "line 42: 18% of stall samples: <text>"
  std::string error;            // repair: the compiler log or the mismatch report
  std::vector<std::string> failures;   // earlier failed attempts of this lineage
  std::string bound, bottleneck;       // for retrieval
};

// The same for every request of a run (others: set per batch).
struct LlmTaskInfo {
  std::string op, formula, tensors, scalars, shapes, dtype, compare;
  std::string target, language, entry_point, abi;
  std::string extra_rules;  // the task's own (a plain kernel's signature), one "- " line each
  std::string others;  // the best and a few diverse candidates, one per line
  // The hardware: the knowledge base's sheet of the part and the roof kevo
  // measured on it, side by side ("" when neither is known).
  std::string hardware;
  // The features the sheet says the part has (TMA, wgmma, AVX-512, ...):
  // patterns that need others are not retrieved. Unset: not filtered.
  std::optional<std::vector<std::string>> features;
};

struct LlmOutcome {
  int64_t call = 0;     // llm_calls row
  std::string model;    // the model's name (label)
  std::string source;   // the new kernel; empty when the reply gave none
  std::string why_not;  // why there is no source
  bool cached = false;  // answered from a recorded call
};

// Makes the client of one model; tests and replays may pass their own.
using LlmClientFactory = std::function<std::unique_ptr<llm::Client>(
    const llm::ModelConfig&, std::shared_ptr<llm::Limiter>, std::shared_ptr<llm::Budget>)>;

class LlmSynthesizer {
 public:
  // Reads the prompt templates now: a missing template or an unknown
  // placeholder is a UserError. `kb` may be null (no retrieval).
  LlmSynthesizer(llm::LlmConfig config, Store& store, const KnowledgeBase* kb,
                 LlmClientFactory factory = {});
  ~LlmSynthesizer();

  const llm::LlmConfig& config() const { return config_; }
  void set_run(int64_t run) { run_ = run; }

  // One request per ask (at most config().concurrency in flight), the model
  // of each drawn by weight from `rng`. Outcomes come in the order of `asks`
  // whatever order the replies arrive in, so a replay sees the same.
  std::vector<LlmOutcome> generate(const LlmTaskInfo& task, const std::vector<LlmAsk>& asks,
                                   std::mt19937_64& rng);
  // generate() in two steps, so that the requests are in flight while the
  // caller does other work: start() decides everything (models, prompts,
  // recorded replies) on this thread and sends the requests; finish() waits
  // for the replies and records every call, in the order of the asks.
  struct InFlight;
  std::shared_ptr<InFlight> start(const LlmTaskInfo& task, const std::vector<LlmAsk>& asks,
                                  std::mt19937_64& rng);
  std::vector<LlmOutcome> finish(InFlight& batch);
  // A replay: the replayed run's calls (Store::llm_calls_of_run), which answer
  // this run's calls one by one in order, each only for the same prompt (the
  // same request, byte for byte) and the way it was answered then (a reply,
  // or a failure of the same kind). A call the recording cannot answer fails,
  // and divergence() says which call and where its prompt differs.
  void follow(std::vector<LlmCallRecord> calls) {
    script_ = std::move(calls);
    script_next_ = 0;
  }
  // Skips the first `n` calls of the recording (a resumed replay made them).
  void follow_from(size_t n) { script_next_ = n; }
  const std::string& divergence() const { return divergence_; }
  // Links a recorded call to the candidate made from its reply.
  void link(int64_t call, int64_t candidate);

  // The messages of one request (for tests and `--dry-run` style checks).
  std::vector<llm::Message> prompt(const LlmTaskInfo& task, const LlmAsk& ask) const;

  // Whether the token or money budget is spent: no more requests are made.
  bool exhausted() const { return exhausted_; }

  int64_t calls() const { return calls_; }
  int64_t cached_calls() const { return cached_; }
  int64_t failed_calls() const { return failed_; }
  // The failed calls by how they failed ("timeout", "transport", "http",
  // "parse", "breaker", "budget", "cache"), and the last one's words.
  const std::map<std::string, int64_t>& failures() const { return failures_; }
  const std::string& last_failure() const { return last_failure_; }
  int64_t tokens() const;
  double cost_usd() const;

 private:
  std::string knowledge_for(const LlmTaskInfo& task, const LlmAsk& ask) const;
  std::string error_help(const LlmTaskInfo& task, const LlmAsk& ask) const;
  // The template `name` for `language` (its own where configs/prompts/<language>/
  // has one) and the file it came from.
  std::pair<const std::string*, std::string> template_for(const std::string& language,
                                                         const char* name) const;
  struct Recorded;
  std::optional<Recorded> recorded(const std::string& key, int64_t occurrence) const;

  llm::LlmConfig config_;
  Store& store_;
  const KnowledgeBase* kb_;
  std::shared_ptr<llm::Limiter> limiter_;
  std::shared_ptr<llm::Budget> budget_;
  std::vector<std::unique_ptr<llm::Client>> clients_;  // one per model, built on first need
  LlmClientFactory factory_;
  // system, improve, repair, simplify, and "<language>/<name>" for a language's own
  std::map<std::string, std::string> templates_;
  std::map<std::string, int64_t> occurrences_;    // prompt key -> times asked in this run
  int64_t run_ = 0;
  int64_t calls_ = 0, cached_ = 0, failed_ = 0;
  std::map<std::string, int64_t> failures_;
  std::string last_failure_;
  bool exhausted_ = false;
  std::optional<std::vector<LlmCallRecord>> script_;
  size_t script_next_ = 0;
  std::string divergence_;  // the first call a replay's recording could not answer
};

// Where two requests' prompts first differ: "the user message, line 57: now
// '...', recorded '...'" (for saying why a replay left its recording).
std::string prompt_difference(const std::string& recorded, const std::string& now);

}  // namespace kevo
