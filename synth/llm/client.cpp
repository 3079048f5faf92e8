// Start at HttpClient::complete: the retry loop. The two wire formats
// (request body, headers, reply and error parsing) are the functions above it.
//
// Wire formats, from the vendors' API references:
//  - OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat):
//    POST {endpoint}/chat/completions, "Authorization: Bearer KEY"; the reply's
//    text is choices[0].message.content, its usage usage.prompt_tokens and
//    usage.completion_tokens; errors are {"error": {"message", "type", ...}}.
//  - Anthropic Messages (https://docs.anthropic.com/en/api/messages,
//    https://docs.anthropic.com/en/api/errors): POST {endpoint}/messages,
//    "x-api-key: KEY" and "anthropic-version: 2023-06-01"; system prompts go in
//    the top-level "system" field, not in "messages"; the reply's text is the
//    "text" blocks of "content", its usage usage.input_tokens and
//    usage.output_tokens; errors are {"type": "error", "error": {"type",
//    "message"}}; 529 means the service is overloaded and is worth retrying.
// Retry-After is either a number of seconds or an HTTP date (RFC 9110 10.2.3).
#include "synth/llm/client.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include <curl/curl.h>
#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "core/redact.h"
#include "synth/llm/http.h"

namespace kevo::llm {

namespace {

using nlohmann::json;

std::atomic<double> backoff_scale{1.0};

constexpr double kBackoffBase_s = 1;
constexpr double kBackoffCap_s = 60;
// A Retry-After further away than this is taken as this: one bad header must
// not stall an overnight run.
constexpr double kRetryAfterCap_s = 600;

// Invalid UTF-8 (say, a compiler message quoting a binary) is replaced rather
// than thrown on.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool is_anthropic(const ModelConfig& m) {
  return m.api == "anthropic";
}

std::string url_of(const ModelConfig& m) {
  return m.endpoint + (is_anthropic(m) ? "/messages" : "/chat/completions");
}

json body_of(const ModelConfig& m, const Request& r) {
  json body = {{"model", m.model},
               {"temperature", r.temperature.value_or(m.temperature)},
               {"max_tokens", r.max_tokens.value_or(m.max_tokens)}};
  json messages = json::array();
  std::string system;
  for (const auto& msg : r.messages) {
    KEVO_ASSERT(msg.role == "system" || msg.role == "user" || msg.role == "assistant");
    if (is_anthropic(m) && msg.role == "system") {
      system += (system.empty() ? "" : "\n\n") + msg.content;
      continue;
    }
    messages.push_back({{"role", msg.role}, {"content", msg.content}});
  }
  body["messages"] = std::move(messages);
  if (!system.empty()) body["system"] = system;
  return body;
}

std::vector<std::string> headers_of(const ModelConfig& m, const std::string& key) {
  if (is_anthropic(m)) {
    std::vector<std::string> h = {"content-type: application/json",
                                  "anthropic-version: 2023-06-01"};
    if (!key.empty()) h.push_back("x-api-key: " + key);
    return h;
  }
  std::vector<std::string> h = {"Content-Type: application/json"};
  if (!key.empty()) h.push_back("Authorization: Bearer " + key);
  return h;
}

// The fields of a successful reply; throws std::runtime_error naming what is missing.
void read_reply(const ModelConfig& m, const std::string& body, Reply& out) {
  json j = json::parse(body);  // json::parse_error is a std::exception too
  auto need = [](const json& obj, const char* key) -> const json& {
    if (!obj.is_object() || !obj.contains(key))
      throw std::runtime_error(fmt::format("no \"{}\" field", key));
    return obj[key];
  };
  auto str_or_empty = [](const json& v) { return v.is_string() ? v.get<std::string>() : ""; };
  auto count = [](const json& usage, const char* key) -> int64_t {
    if (!usage.is_object() || !usage.contains(key)) return 0;
    if (!usage[key].is_number_integer())
      throw std::runtime_error(fmt::format("usage.{} is not an integer", key));
    return usage[key].get<int64_t>();
  };
  out.model = j.is_object() && j.contains("model") ? str_or_empty(j["model"]) : "";
  if (out.model.empty()) out.model = m.model;
  // Usage is optional: some OpenAI-compatible local servers leave it out.
  const json usage = j.is_object() && j.contains("usage") ? j["usage"] : json();

  if (is_anthropic(m)) {
    const json& content = need(j, "content");
    if (!content.is_array()) throw std::runtime_error("\"content\" is not a list of blocks");
    out.text.clear();
    for (const auto& block : content)
      if (block.is_object() && block.value("type", "") == "text")
        out.text += str_or_empty(need(block, "text"));
    out.finish_reason = str_or_empty(need(j, "stop_reason"));
    out.input_tokens = count(usage, "input_tokens");
    out.output_tokens = count(usage, "output_tokens");
    return;
  }
  const json& choices = need(j, "choices");
  if (!choices.is_array() || choices.empty()) throw std::runtime_error("\"choices\" is empty");
  const json& message = need(choices[0], "message");
  const json& content = need(message, "content");
  // null content: the model refused or was filtered; finish_reason says which.
  if (!content.is_string() && !content.is_null())
    throw std::runtime_error("choices[0].message.content is not a string");
  out.text = str_or_empty(content);
  out.finish_reason =
      choices[0].contains("finish_reason") ? str_or_empty(choices[0]["finish_reason"]) : "";
  out.input_tokens = count(usage, "prompt_tokens");
  out.output_tokens = count(usage, "completion_tokens");
}

// The server's own explanation of an error status, from either API's error
// shape, else the start of the body.
std::string server_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const json& e = j["error"];
    std::string msg = e.value("message", "");
    std::string type = e.value("type", "");
    if (!msg.empty()) return type.empty() ? msg : fmt::format("{} ({})", msg, type);
  }
  std::string s = body.substr(0, 200);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.empty() ? "(empty body)" : s;
}

bool retryable_status(long s) {
  return s == 429 || s == 500 || s == 502 || s == 503 || s == 504 || s == 529;
}

// Seconds to wait as the server asked, when it did.
std::optional<double> retry_after_s(const std::map<std::string, std::string>& headers) {
  auto it = headers.find("retry-after");
  if (it == headers.end() || it->second.empty()) return std::nullopt;
  const std::string& v = it->second;
  if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; }))
    return std::clamp(std::atof(v.c_str()), 0.0, kRetryAfterCap_s);
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  double s = std::difftime(when, std::time(nullptr));
  return std::clamp(s, 0.0, kRetryAfterCap_s);
}

// Exponential backoff with jitter, so clients that failed together do not
// retry together: [0.5, 1] x min(cap, base * 2^retry).
double backoff_s(int retry) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double full = std::min(kBackoffCap_s, kBackoffBase_s * std::pow(2.0, retry));
  return full * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
}

std::string attempts(int n) {
  return n == 1 ? "1 attempt" : fmt::format("{} attempts", n);
}

// Servers have been known to echo a key back in an error message.
std::string redact(std::string s, const std::string& key) {
  if (key.empty()) return s;
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p))
    s.replace(p, key.size(), "[key]");
  return s;
}

class HttpClient final : public Client {
 public:
  HttpClient(ModelConfig m, std::shared_ptr<Limiter> limiter, std::shared_ptr<Budget> budget)
      : config_(std::move(m)), limiter_(std::move(limiter)), budget_(std::move(budget)) {
    KEVO_ASSERT(limiter_ && budget_);
  }

  const ModelConfig& config() const override { return config_; }

  // One call through the breaker: refused at once while it is open; a call
  // that fails (every attempt spent) counts toward opening it, one that is
  // answered closes it.
  Reply complete(const Request& r) override {
    budget_->check();
    breaker_check();
    try {
      Reply reply = call(r);
      breaker_closed();
      return reply;
    } catch (const LlmError& e) {
      if (e.kind != "budget") breaker_failed(e.what());
      throw;
    }
  }

 private:
  Reply call(const Request& r) {
    auto start = std::chrono::steady_clock::now();
    const std::string key = read_key();
    const std::string url = url_of(config_);
    const std::vector<std::string> headers = headers_of(config_, key);
    Reply reply;
    // No secret of kevo's in what is sent (a candidate's output, quoted in a
    // prompt, could hold one).
    reply.request_json = redact_secrets(dump(body_of(config_, r)));

    bool reread = false;  // a malformed 200 is asked again once
    for (int attempt = 1;; ++attempt) {
      // Every error says how many attempts it took (the call's row keeps it).
      auto fail = [&](LlmError e) -> LlmError {
        e.attempts = attempt;
        return e;
      };
      HttpResult res;
      {
        Limiter::Slot slot = limiter_->acquire();
        res = http_post(url, headers, reply.request_json, config_.timeout_s);
      }
      bool last = attempt > config_.retries;
      std::optional<double> wait;  // set when this attempt may be retried
      if (res.failure == HttpResult::Failure::timeout) {
        if (last)
          throw fail(LlmError("timeout", redact(fmt::format("{}: no response from {} within {} s ({})",
                                                            config_.name, url, config_.timeout_s,
                                                            attempts(attempt)),
                                                key)));
        wait = backoff_s(attempt - 1);
      } else if (res.failure == HttpResult::Failure::transport) {
        if (last || !res.retryable)
          throw fail(LlmError("transport",
                              redact(fmt::format("{}: no complete response from {} ({}): {}",
                                                 config_.name, url, attempts(attempt), res.error),
                                     key)));
        wait = backoff_s(attempt - 1);
      } else if (res.status < 200 || res.status > 299) {
        if (last || !retryable_status(res.status))
          throw fail(LlmError(
              "http",
              redact(fmt::format("{}: HTTP {} from {} ({}): {}", config_.name, res.status, url,
                                 attempts(attempt), server_message(res.body)),
                     key),
              static_cast<int>(res.status)));
        wait = retry_after_s(res.headers).value_or(backoff_s(attempt - 1));
      } else {
        reply.attempts = attempt;
        reply.response_json = redact(std::move(res.body), key);
        try {
          finish(reply, url, key, start);
          return reply;
        } catch (const LlmError& e) {
          // A 200 whose body is not the API's reply (a proxy's page, a cut
          // stream the server closed cleanly): asked once more, then a failure.
          if (reread) throw fail(e);
          reread = true;
          res.error = e.what();
          wait = backoff_s(attempt - 1);
        }
      }
      double scaled = *wait * backoff_scale.load();
      log_info("llm {}: attempt {} failed ({}), retrying in {:.1f} s", config_.name, attempt,
               res.failure == HttpResult::Failure::none && res.error.empty()
                   ? fmt::format("HTTP {}", res.status)
                   : redact(res.error, key),
               scaled);
      std::this_thread::sleep_for(std::chrono::duration<double>(scaled));
    }
  }

  void breaker_check() {
    std::lock_guard lock(breaker_mutex_);
    if (config_.breaker_after <= 0 || failures_in_a_row_ < config_.breaker_after) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < open_until_)
      throw LlmError(
          "breaker",
          fmt::format("{}: not called: its last {} calls failed (the last: {}); called again in "
                      "{:.0f} s",
                      config_.name, failures_in_a_row_, last_failure_,
                      std::chrono::duration<double>(open_until_ - now).count()));
    // The cool-down is over: this call is the probe. Until it ends, no other
    // call goes out.
    open_until_ = now + std::chrono::hours(24 * 365);
  }

  void breaker_failed(const std::string& what) {
    std::lock_guard lock(breaker_mutex_);
    last_failure_ = what;
    if (++failures_in_a_row_ < config_.breaker_after || config_.breaker_after <= 0) return;
    const double wait = cooldown_s_ * backoff_scale.load();
    open_until_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(wait));
    log_warn("llm {}: {} calls in a row failed (the last: {}); not calling it for {:.0f} s",
             config_.name, failures_in_a_row_, what, wait);
    cooldown_s_ = std::min(cooldown_s_ * 2, kMaxCooldown_s);  // the next opening waits longer
  }

  void breaker_closed() {
    std::lock_guard lock(breaker_mutex_);
    if (failures_in_a_row_ >= config_.breaker_after && config_.breaker_after > 0)
      log_info("llm {}: answering again", config_.name);
    failures_in_a_row_ = 0;
    cooldown_s_ = config_.breaker_cooldown_s;
    open_until_ = {};
  }

  std::string read_key() const {
    if (config_.api_key_env.empty()) return "";
    const char* v = std::getenv(config_.api_key_env.c_str());
    if (!v || !*v)
      throw UserError(fmt::format(
          "llm model '{}': environment variable {} is not set (it should hold the API key)",
          config_.name, config_.api_key_env));
    add_secret(v);
    return v;
  }

  void finish(Reply& reply, const std::string& url, const std::string& key,
              std::chrono::steady_clock::time_point start) {
    try {
      read_reply(config_, reply.response_json, reply);
    } catch (const std::exception& e) {
      throw LlmError(
          "parse",
          redact(fmt::format("{}: malformed reply from {}: {}", config_.name, url, e.what()), key));
    }
    reply.cost_usd = (reply.input_tokens * config_.usd_per_mtok_in +
                      reply.output_tokens * config_.usd_per_mtok_out) /
                     1e6;
    reply.latency_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    budget_->add(reply.input_tokens, reply.output_tokens, reply.cost_usd);
  }

  const ModelConfig config_;
  std::shared_ptr<Limiter> limiter_;
  std::shared_ptr<Budget> budget_;
  // The circuit breaker: consecutive failed calls, until when calls are
  // refused, and the cool-down the next opening takes.
  static constexpr double kMaxCooldown_s = 3600;
  std::mutex breaker_mutex_;
  int failures_in_a_row_ = 0;
  std::chrono::steady_clock::time_point open_until_{};
  double cooldown_s_ = config_.breaker_cooldown_s;
  std::string last_failure_;
};

}  // namespace

LlmError::LlmError(std::string k, const std::string& what, int s)
    : std::runtime_error(what), kind(std::move(k)), status(s) {}

Budget::Budget(int64_t tokens, double usd) : tokens_(tokens), usd_(usd) {
  KEVO_ASSERT(tokens >= 0 && usd >= 0);
}

void Budget::check() const {
  std::lock_guard lock(mutex_);
  if (tokens_ > 0 && tokens_used_ >= tokens_)
    throw LlmError("budget", fmt::format("LLM token budget spent: {} of {} tokens used",
                                         tokens_used_, tokens_));
  if (usd_ > 0 && usd_used_ >= usd_)
    throw LlmError("budget",
                   fmt::format("LLM money budget spent: ${:.6g} of ${:.6g} used", usd_used_, usd_));
}

void Budget::add(int64_t in, int64_t out, double usd) {
  std::lock_guard lock(mutex_);
  tokens_used_ += in + out;
  usd_used_ += usd;
}

int64_t Budget::tokens_used() const {
  std::lock_guard lock(mutex_);
  return tokens_used_;
}

double Budget::usd_used() const {
  std::lock_guard lock(mutex_);
  return usd_used_;
}

Limiter::Limiter(int n) : free_(n) {
  KEVO_ASSERT(n >= 1);
}

Limiter::Slot Limiter::acquire() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return free_ > 0; });
  --free_;
  return Slot(this);
}

Limiter::Slot::~Slot() {
  if (!limiter_) return;
  {
    std::lock_guard lock(limiter_->mutex_);
    ++limiter_->free_;
  }
  limiter_->freed_.notify_one();
}

std::unique_ptr<Client> make_client(const ModelConfig& m, std::shared_ptr<Limiter> limiter,
                                    std::shared_ptr<Budget> budget) {
  KEVO_ASSERT(m.api == "openai" || m.api == "anthropic");
  return std::make_unique<HttpClient>(m, std::move(limiter), std::move(budget));
}

std::string request_json(const ModelConfig& m, const Request& r) {
  return dump(body_of(m, r));
}

void set_backoff_scale(double s) {
  KEVO_ASSERT(s >= 0);
  backoff_scale.store(s);
}

}  // namespace kevo::llm
