// A local stand-in for the LLM services: an HTTP/1.1 server on 127.0.0.1 that
// speaks OpenAI Chat Completions (POST /v1/chat/completions) and Anthropic
// Messages (POST /v1/messages), records every request and answers from a
// script, then from a responder. For tests only; loopback only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kevo::testing {

struct RecordedRequest {
  std::string method, target;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// The system prompt and every message's content of an API request, joined by
// newlines ("" when the body is not such a request): what a responder reads.
std::string prompt_text(const RecordedRequest& r);

// One answer. By default a 200 carrying `text` in the API's reply JSON (the
// API is the one of the path asked). A status other than 200 with no raw_body
// carries `text` as the message of the API's error JSON.
struct Step {
  int status = 200;
  std::string text;
  std::string raw_body;  // when set, sent as is
  std::map<std::string, std::string> headers;
  int64_t input_tokens = -1, output_tokens = -1;  // -1: derived from the lengths
  std::string finish_reason;                      // empty: "stop" / "end_turn"
  double delay_s = 0;                             // wait before answering (at most 2 s)
  int64_t drop_after = -1;  // send headers and this many body bytes, then close

  static Step reply(std::string text);
  static Step raw(int status, std::string body, std::map<std::string, std::string> headers = {});
  static Step error(int status, std::string message,
                    std::map<std::string, std::string> headers = {});
  static Step dropped(int64_t after);
  static Step delayed(double s, std::string text);
};

class FakeLlmServer {
 public:
  FakeLlmServer();  // listening on an ephemeral port when it returns
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  std::string base_url() const;  // http://127.0.0.1:PORT/v1
  // Replaces what is left of the script: the next requests get these steps in order.
  void script(std::vector<Step> steps);
  // Answers once the script is exhausted (else a 500 says it is).
  void set_responder(std::function<Step(const RecordedRequest&)> f);
  std::vector<RecordedRequest> requests() const;
  // The most requests that were being answered at the same moment.
  int max_in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo::testing
