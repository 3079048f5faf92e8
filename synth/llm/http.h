// One HTTP POST over libcurl, for the LLM clients: a fresh easy handle per
// call (so calls from many threads never share one), no signals, a deadline
// for the whole transfer, and the response headers kept for Retry-After.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kevo::llm {

struct HttpResult {
  // none: a response arrived whole (any status). transport: no complete
  // response (refused, reset, body cut short). timeout: the deadline passed.
  enum class Failure { none, transport, timeout } failure = Failure::none;
  bool retryable = true;  // false for failures that the same request will hit again (bad URL)
  std::string error;      // curl's explanation when failure != none
  long status = 0;
  std::map<std::string, std::string> headers;  // names in lower case, last value wins
  std::string body;
};

// POSTs `body` to `url` with `headers` ("Name: value"). Never throws for
// network trouble: that is reported in the result.
HttpResult http_post(const std::string& url, const std::vector<std::string>& headers,
                     const std::string& body, double timeout_s);

}  // namespace kevo::llm
