#include "synth/llm/http.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <mutex>

#include <curl/curl.h>

#include "core/error.h"

namespace kevo::llm {

namespace {

// curl_global_init is the one libcurl call that is not thread-safe
// (https://curl.se/libcurl/c/libcurl-thread.html); do it once, first.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    KEVO_ASSERT(rc == CURLE_OK);
  });
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

// Called once per header line, status line included.
size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto& headers = *static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  // A new status line starts a new header block (after a 1xx or a redirect).
  if (line.rfind("HTTP/", 0) == 0) headers.clear();
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = trim(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    headers[name] = trim(line.substr(colon + 1));
  }
  return size * n;
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

HttpResult http_post(const std::string& url, const std::vector<std::string>& headers,
                     const std::string& body, double timeout_s) {
  init_curl_once();
  HttpResult r;
  std::unique_ptr<CURL, EasyDeleter> curl(curl_easy_init());
  KEVO_ASSERT(curl != nullptr);

  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  // curl sends "Expect: 100-continue" before a large body and then waits up
  // to a second for the go-ahead; LLM APIs do not need it.
  list = curl_slist_append(list, "Expect:");
  std::unique_ptr<curl_slist, SlistDeleter> header_list(list);

  long timeout_ms = std::max(1L, std::lround(timeout_s * 1000));
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  // Timeouts in a threaded program without signals (CURLOPT_NOSIGNAL(3)).
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 30'000L));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever this libcurl can decode
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);

  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  if (rc == CURLE_OK) return r;

  r.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      r.failure = HttpResult::Failure::timeout;
      break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      r.failure = HttpResult::Failure::transport;
      r.retryable = false;
      break;
    default:  // refused, reset, CURLE_PARTIAL_FILE / CURLE_RECV_ERROR for a body cut short, ...
      r.failure = HttpResult::Failure::transport;
      break;
  }
  return r;
}

}  // namespace kevo::llm
