// Clients for the LLM APIs kevo talks to (OpenAI-compatible Chat Completions
// and Anthropic Messages): one blocking, thread-safe complete() per model
// with retries, a shared concurrency limit and a shared token/money budget.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "synth/llm/config.h"

namespace kevo::llm {

struct Message {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

struct Request {
  std::vector<Message> messages;
  std::optional<double> temperature;  // else the model's configured one
  std::optional<int> max_tokens;      // else the model's configured one
};

struct Reply {
  std::string text;           // the assistant's text (Anthropic: its text blocks joined)
  std::string model;          // as the server reported it
  std::string finish_reason;  // OpenAI finish_reason / Anthropic stop_reason
  int64_t input_tokens = 0, output_tokens = 0;
  double cost_usd = 0;
  double latency_s = 0;       // the whole call: waits for a slot, retries and backoff included
  int attempts = 1;           // HTTP attempts made
  std::string request_json;   // the exact body sent; keys travel only in headers
  std::string response_json;  // the body received
};

// A call that finally failed. kind: "http" (status in `status`), "transport"
// (refused, reset, body cut short), "timeout", "parse" (malformed JSON or
// missing fields), "budget". The message never holds the key.
struct LlmError : std::runtime_error {
  std::string kind;
  int status = 0;
  int attempts = 0;  // HTTP attempts made before it gave up (0: none)
  LlmError(std::string kind, const std::string& what, int status = 0);
};

// Token and money counters shared by all clients of a run. A call is refused
// once the budget is spent; calls already in flight may overshoot it a little.
class Budget {
 public:
  Budget(int64_t tokens, double usd);  // 0: unlimited
  void check() const;                  // throws LlmError "budget" when spent
  void add(int64_t in, int64_t out, double usd);
  int64_t tokens_used() const;
  double usd_used() const;

 private:
  const int64_t tokens_;
  const double usd_;
  mutable std::mutex mutex_;
  int64_t tokens_used_ = 0;
  double usd_used_ = 0;
};

// A counting semaphore: at most n HTTP requests in flight over all clients
// that share it. A slot is held for one HTTP attempt, not during backoff.
class Limiter {
 public:
  explicit Limiter(int n);

  class Slot {
   public:
    explicit Slot(Limiter* l) : limiter_(l) {}
    Slot(Slot&& o) noexcept : limiter_(o.limiter_) { o.limiter_ = nullptr; }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    Limiter* limiter_;
  };
  Slot acquire();  // blocks until a slot is free

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
};

class Client {  // one model
 public:
  virtual ~Client() = default;
  virtual const ModelConfig& config() const = 0;
  // Blocking; thread-safe. Retries on 429, 500, 502, 503, 504, 529, timeouts
  // and transport errors up to config().retries times, with exponential
  // backoff and jitter (base 1 s, cap 60 s) or the server's Retry-After
  // (seconds or an HTTP date) when it sends one; other statuses are final.
  // A missing key (api_key_env names an unset variable) is a UserError.
  virtual Reply complete(const Request& r) = 0;
};

std::unique_ptr<Client> make_client(const ModelConfig& m, std::shared_ptr<Limiter> limiter,
                                    std::shared_ptr<Budget> budget);

// The exact JSON body complete() sends for `r` (e.g. to key a cache of calls).
std::string request_json(const ModelConfig& m, const Request& r);

// For tests and fast replays: backoff and Retry-After waits are multiplied by
// this (default 1; tests set 0.01).
void set_backoff_scale(double s);

}  // namespace kevo::llm
