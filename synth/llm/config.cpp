#include "synth/llm/config.h"

#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/redact.h"
#include "core/json_reader.h"
#include "core/paths.h"

namespace kevo::llm {

namespace {

// The vendors' own services, used when a model names no endpoint, and their
// limits (OpenAI: https://platform.openai.com/docs/api-reference/chat;
// Anthropic: https://docs.anthropic.com/en/api/messages).
struct Vendor {
  const char* endpoint;
  const char* key_env;
};
Vendor vendor_of(const std::string& api) {
  if (api == "openai") return {"https://api.openai.com/v1", "OPENAI_API_KEY"};
  return {"https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"};
}

double number_in(JsonObject& o, const char* key, double fallback, double lo, double hi) {
  double v = o.get_number(key, fallback);
  if (!(v >= lo && v <= hi))
    throw ConfigError(o.path_of(key),
                      fmt::format("expected a number in [{}, {}], got {}", lo, hi, v));
  return v;
}

int64_t int_in(JsonObject& o, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  int64_t v = o.get_int(key, fallback);
  if (v < lo || v > hi)
    throw ConfigError(o.path_of(key),
                      fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v));
  return v;
}

ModelConfig parse_model(const nlohmann::json& j, const std::string& path) {
  JsonObject o(j, path);
  ModelConfig m;
  m.api = o.get_string("api");
  if (m.api != "openai" && m.api != "anthropic")
    throw ConfigError(o.path_of("api"), "must be openai or anthropic");
  m.model = o.get_string("model");
  if (m.model.empty()) throw ConfigError(o.path_of("model"), "must not be empty");
  m.name = o.get_string("name", m.model);
  if (m.name.empty()) throw ConfigError(o.path_of("name"), "must not be empty");

  Vendor vendor = vendor_of(m.api);
  bool own_endpoint = o.has("endpoint");
  m.endpoint = o.get_string("endpoint", vendor.endpoint);
  if (m.endpoint.rfind("http://", 0) != 0 && m.endpoint.rfind("https://", 0) != 0)
    throw ConfigError(o.path_of("endpoint"), "must be an http:// or https:// URL");
  while (m.endpoint.size() > 1 && m.endpoint.back() == '/') m.endpoint.pop_back();
  m.api_key_env = o.get_string("api_key_env", own_endpoint ? "" : vendor.key_env);
  if (!m.api_key_env.empty()) add_secret_from_env(m.api_key_env);  // never stored, printed or sent

  // OpenAI accepts temperatures up to 2, Anthropic up to 1.
  m.temperature = number_in(o, "temperature", m.temperature, 0, m.api == "openai" ? 2 : 1);
  m.max_tokens = static_cast<int>(int_in(o, "max_tokens", m.max_tokens, 1, 1'000'000));
  m.timeout_s = number_in(o, "timeout_s", m.timeout_s, 0.001, 3600);
  m.retries = static_cast<int>(int_in(o, "retries", m.retries, 0, 20));
  m.breaker_after = static_cast<int>(int_in(o, "breaker_after", m.breaker_after, 0, 1000));
  m.breaker_cooldown_s = number_in(o, "breaker_cooldown_s", m.breaker_cooldown_s, 0.001, 86400);
  m.weight = o.get_number("weight", m.weight);
  if (!(m.weight > 0)) throw ConfigError(o.path_of("weight"), "expected a number > 0");
  m.usd_per_mtok_in = number_in(o, "usd_per_mtok_in", 0, 0, 1e6);
  m.usd_per_mtok_out = number_in(o, "usd_per_mtok_out", 0, 0, 1e6);
  o.finish();
  return m;
}

}  // namespace

nlohmann::json ModelConfig::to_json() const {
  return {{"name", name},
          {"api", api},
          {"endpoint", endpoint},
          {"model", model},
          {"api_key_env", api_key_env},
          {"temperature", temperature},
          {"max_tokens", max_tokens},
          {"timeout_s", timeout_s},
          {"retries", retries},
          {"breaker_after", breaker_after},
          {"breaker_cooldown_s", breaker_cooldown_s},
          {"weight", weight},
          {"usd_per_mtok_in", usd_per_mtok_in},
          {"usd_per_mtok_out", usd_per_mtok_out}};
}

nlohmann::json LlmConfig::to_json() const {
  nlohmann::json ms = nlohmann::json::array();
  for (const auto& m : models) ms.push_back(m.to_json());
  return {{"models", ms},
          {"concurrency", concurrency},
          {"budget_tokens", budget_tokens},
          {"budget_usd", budget_usd},
          {"cache", cache},
          {"repair_attempts", repair_attempts},
          {"simplify_after", simplify_after},
          {"per_batch", per_batch},
          {"knowledge", knowledge},
          {"prompts_dir", prompts_dir},
          {"optional", optional}};
}

LlmConfig parse_llm_config(const nlohmann::json& j, const std::string& path) {
  JsonObject o(j, path);
  LlmConfig c;
  const nlohmann::json* models = o.get_raw("models");
  if (!models || !models->is_array() || models->empty())
    throw ConfigError(o.path_of("models"), "expected a non-empty list of models");
  std::set<std::string> names;
  for (size_t i = 0; i < models->size(); ++i) {
    std::string mpath = fmt::format("{}[{}]", o.path_of("models"), i);
    ModelConfig m = parse_model((*models)[i], mpath);
    // The name keys the store's llm_calls and the reports, so it must be unique.
    if (!names.insert(m.name).second)
      throw ConfigError(
          mpath + ".name",
          fmt::format("duplicate model name '{}' (set \"name\" to tell them apart)", m.name));
    c.models.push_back(std::move(m));
  }
  c.concurrency = static_cast<int>(int_in(o, "concurrency", c.concurrency, 1, 256));
  c.budget_tokens = int_in(o, "budget_tokens", 0, 0, INT64_MAX);
  c.budget_usd = number_in(o, "budget_usd", 0, 0, 1e9);
  c.cache = o.get_string("cache", c.cache);
  if (c.cache != "use" && c.cache != "only" && c.cache != "off")
    throw ConfigError(o.path_of("cache"), "must be use, only or off");
  c.repair_attempts = static_cast<int>(int_in(o, "repair_attempts", c.repair_attempts, 0, 1000));
  c.simplify_after = static_cast<int>(int_in(o, "simplify_after", c.simplify_after, 1, 1000));
  c.per_batch = static_cast<int>(int_in(o, "per_batch", c.per_batch, 1, 256));
  c.knowledge = static_cast<int>(int_in(o, "knowledge", c.knowledge, 0, 20));
  c.prompts_dir = o.get_string("prompts_dir", (kevo_home() / "configs" / "prompts").string());
  if (c.prompts_dir.empty()) throw ConfigError(o.path_of("prompts_dir"), "must not be empty");
  c.optional = o.get_bool("optional", false);
  o.finish();
  return c;
}

}  // namespace kevo::llm
