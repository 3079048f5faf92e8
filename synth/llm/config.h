// The "llm" section of a task: which models the LLM synthesizer asks, how
// many requests may be in flight, the token and money budget, and how the
// recorded calls are reused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo::llm {

struct ModelConfig {
  std::string name;      // label used in the store and reports; defaults to `model`
  std::string api;       // "openai" (Chat Completions) | "anthropic" (Messages)
  std::string endpoint;  // base URL without the method: https://api.openai.com/v1
  std::string model;
  // NAME of the environment variable that holds the key; empty: send no key
  // (local servers). The key itself is read when a request is made and is
  // never stored, logged or put in an error message.
  std::string api_key_env;
  double temperature = 0.7;
  int max_tokens = 4096;
  double timeout_s = 120;  // one HTTP attempt, connect to last byte
  int retries = 4;
  // The circuit breaker: after this many calls in a row failed (each with
  // all its retries), the model is not called for `breaker_cooldown_s`,
  // doubling at each opening up to an hour; a call answered resets both.
  // 0: never open.
  int breaker_after = 3;
  double breaker_cooldown_s = 60;
  double weight = 1;  // relative share of requests when several models are listed
  double usd_per_mtok_in = 0, usd_per_mtok_out = 0;

  nlohmann::json to_json() const;
};

struct LlmConfig {
  std::vector<ModelConfig> models;
  int concurrency = 4;        // requests in flight at once, over all models
  int64_t budget_tokens = 0;  // 0: unlimited; input + output tokens over the run
  double budget_usd = 0;      // 0: unlimited
  std::string cache = "use";  // "use" | "only" (never touch the network) | "off"
  int repair_attempts = 10;   // compile/mismatch repairs per lineage
  int simplify_after = 3;     // ask for a simpler kernel after this many failed repairs in a row
  int per_batch = 2;          // LLM requests per batch of the search (beside the strategy's proposals)
  int knowledge = 4;          // knowledge-base documents retrieved into each prompt
  std::string prompts_dir;    // default kevo_home()/configs/prompts
  // Whether a run may go on without the LLM when a model's key variable is
  // not set (it then says so once); else that is an error at start.
  bool optional = false;

  // Everything above; holds key names only, never key material.
  nlohmann::json to_json() const;
};

// Reads the "llm" section strictly: an unknown key, a wrong type or a bad
// value is a ConfigError naming its path ("llm.models[1].api: must be openai
// or anthropic"). Without "endpoint" a model talks to the vendor's service and
// its key is read from OPENAI_API_KEY / ANTHROPIC_API_KEY unless "api_key_env"
// says otherwise ("" for none).
LlmConfig parse_llm_config(const nlohmann::json& j, const std::string& path = "llm");

}  // namespace kevo::llm
