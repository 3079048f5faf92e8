// Threads: one runs the acceptor's io_context; each connection is served
// synchronously on its own thread. Stopping closes the acceptor, shuts the
// open sockets down (which ends blocked reads) and wakes any delayed answer.
//
// Reply and error shapes follow the vendors' references:
// https://platform.openai.com/docs/api-reference/chat/object,
// https://docs.anthropic.com/en/api/messages, https://docs.anthropic.com/en/api/errors.
#include "fake_llm_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace kevo::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

Step Step::reply(std::string text) {
  Step s;
  s.text = std::move(text);
  return s;
}

Step Step::raw(int status, std::string body, std::map<std::string, std::string> headers) {
  Step s;
  s.status = status;
  s.raw_body = std::move(body);
  s.headers = std::move(headers);
  return s;
}

Step Step::error(int status, std::string message, std::map<std::string, std::string> headers) {
  Step s;
  s.status = status;
  s.text = std::move(message);
  s.headers = std::move(headers);
  return s;
}

Step Step::dropped(int64_t after) {
  Step s;
  s.text = "this reply is cut short by the fake server";
  s.drop_after = after;
  return s;
}

Step Step::delayed(double sec, std::string text) {
  Step s;
  s.text = std::move(text);
  s.delay_s = sec;
  return s;
}

std::string prompt_text(const RecordedRequest& r) {
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object()) return "";
  std::string text;
  auto add = [&](const json& v) {
    if (v.is_string()) text += (text.empty() ? "" : "\n") + v.get<std::string>();
  };
  if (body.contains("system")) add(body["system"]);
  if (body.contains("messages") && body["messages"].is_array())
    for (const auto& m : body["messages"])
      if (m.is_object() && m.contains("content")) add(m["content"]);
  return text;
}

namespace {

constexpr double kMaxDelay_s = 2;

bool is_anthropic_path(const std::string& target) {
  return target == "/v1/messages";
}

std::string error_type(int status, bool anthropic) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return anthropic ? "rate_limit_error" : "rate_limit_exceeded";
    case 529:
      return "overloaded_error";
    default:
      return anthropic ? "api_error" : "server_error";
  }
}

std::string error_body(int status, const std::string& message, bool anthropic) {
  if (anthropic)
    return json{{"type", "error"},
                {"error", {{"type", error_type(status, true)}, {"message", message}}}}
        .dump();
  return json{{"error",
               {{"message", message},
                {"type", error_type(status, false)},
                {"param", nullptr},
                {"code", nullptr}}}}
      .dump();
}

std::string reply_body(const Step& s, const json& request, size_t request_size, bool anthropic,
                       int64_t serial) {
  int64_t in = s.input_tokens >= 0 ? s.input_tokens : std::max<int64_t>(1, request_size / 4);
  int64_t out =
      s.output_tokens >= 0 ? s.output_tokens : std::max<int64_t>(1, (s.text.size() + 3) / 4);
  std::string model = request.value("model", "fake-model");
  if (anthropic)
    return json{{"id", fmt::format("msg_fake_{}", serial)},
                {"type", "message"},
                {"role", "assistant"},
                {"model", model},
                {"content", json::array({{{"type", "text"}, {"text", s.text}}})},
                {"stop_reason", s.finish_reason.empty() ? "end_turn" : s.finish_reason},
                {"stop_sequence", nullptr},
                {"usage", {{"input_tokens", in}, {"output_tokens", out}}}}
        .dump();
  return json{
      {"id", fmt::format("chatcmpl-fake-{}", serial)},
      {"object", "chat.completion"},
      {"created", 1700000000 + serial},
      {"model", model},
      {"choices",
       json::array({{{"index", 0},
                     {"message", {{"role", "assistant"}, {"content", s.text}}},
                     {"finish_reason", s.finish_reason.empty() ? "stop" : s.finish_reason}}})},
      {"usage", {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}}}}
      .dump();
}

// What a real service would refuse before looking at the script: the wrong
// method or path, a body that is not JSON, a required field or header missing.
std::optional<std::pair<int, std::string>> invalid(const RecordedRequest& r, const json& body) {
  bool anthropic = is_anthropic_path(r.target);
  if (r.target != "/v1/chat/completions" && !anthropic)
    return std::pair{404, fmt::format("no such path: {}", r.target)};
  if (r.method != "POST") return std::pair{405, "only POST is supported"};
  if (body.is_discarded() || !body.is_object())
    return std::pair{400, "the body is not a JSON object"};
  if (!body.contains("model") || !body.contains("messages") || !body["messages"].is_array())
    return std::pair{400, "model and messages are required"};
  if (anthropic) {
    if (!r.headers.count("anthropic-version"))
      return std::pair{400, "anthropic-version: header is required"};
    if (!body.contains("max_tokens")) return std::pair{400, "max_tokens: field required"};
    if (body.contains("temperature") &&
        !(body["temperature"].is_number() && body["temperature"].get<double>() <= 1.0))
      return std::pair{400, "temperature: must be a number in [0, 1]"};
    for (const auto& m : body["messages"])
      if (!m.is_object() || m.value("role", json()) == "system")
        return std::pair{400,
                         "messages: each is a user or assistant turn; system goes in the top-level "
                         "system field"};
  }
  return std::nullopt;
}

}  // namespace

struct FakeLlmServer::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  unsigned short port = 0;
  std::thread accept_thread;

  struct Connection {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::list<Connection> connections;  // touched by the accept thread, then by stop()

  mutable std::mutex mu;
  std::condition_variable wake;  // stopping
  bool stopping = false;
  std::set<int> open_fds;
  std::deque<Step> steps;
  std::function<Step(const RecordedRequest&)> responder;
  std::vector<RecordedRequest> recorded;
  int in_flight = 0, max_in_flight = 0;
  int64_t serial = 0;

  void accept_next() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket sock) {
      if (ec) return;  // the acceptor was closed
      connections.remove_if([](Connection& c) {
        if (!c.done) return false;
        c.thread.join();
        return true;
      });
      {
        std::lock_guard lock(mu);
        open_fds.insert(sock.native_handle());
      }
      Connection& c = connections.emplace_back();
      c.thread = std::thread([this, &c, s = std::move(sock)]() mutable {
        serve(s);
        c.done = true;
      });
      accept_next();
    });
  }

  void serve(tcp::socket& sock) {
    beast::flat_buffer buf;
    for (;;) {
      http::request<http::string_body> req;
      beast::error_code ec;
      http::read(sock, buf, req, ec);
      if (ec || !answer(sock, req)) break;
    }
    {
      std::lock_guard lock(mu);
      open_fds.erase(sock.native_handle());
    }
    beast::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_both, ignored);
    sock.close(ignored);
  }

  // Answers one request; false when the connection must close.
  bool answer(tcp::socket& sock, const http::request<http::string_body>& req) {
    RecordedRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      r.headers[name] = std::string(f.value());
    }
    r.body = req.body();
    json body = json::parse(r.body, nullptr, false);
    bool anthropic = is_anthropic_path(r.target);

    Step step;
    int64_t n;
    std::function<Step(const RecordedRequest&)> ask;
    {
      std::lock_guard lock(mu);
      recorded.push_back(r);
      max_in_flight = std::max(max_in_flight, ++in_flight);
      n = ++serial;
      if (auto bad = invalid(r, body)) {
        step = Step::error(bad->first, bad->second);
      } else if (!steps.empty()) {
        step = std::move(steps.front());
        steps.pop_front();
      } else if (responder) {
        ask = responder;
      } else {
        step = Step::error(500, "fake server: the script is exhausted and there is no responder");
      }
    }
    if (ask) step = ask(r);
    return respond(sock, req, step, body, anthropic, n);
  }

  // A request stops counting as in flight just before its answer is sent:
  // once the client has the answer it may send the next one at once.
  void answered() {
    std::lock_guard lock(mu);
    --in_flight;
  }

  bool respond(tcp::socket& sock, const http::request<http::string_body>& req, const Step& step,
               const json& body, bool anthropic, int64_t n) {
    if (step.delay_s > 0) {
      std::unique_lock lock(mu);
      auto d = std::chrono::duration<double>(std::min(step.delay_s, kMaxDelay_s));
      if (wake.wait_for(lock, d, [&] { return stopping; })) {
        --in_flight;
        return false;
      }
    }
    answered();
    std::string payload = !step.raw_body.empty() ? step.raw_body
                          : step.status == 200
                              ? reply_body(step, body, req.body().size(), anthropic, n)
                              : error_body(step.status, step.text, anthropic);
    beast::error_code ec;
    if (step.drop_after >= 0) {
      // Promise the whole body, send part of it, hang up.
      size_t sent = std::min<size_t>(step.drop_after, payload.size() - 1);
      std::string head = fmt::format(
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
          payload.size());
      asio::write(sock, asio::buffer(head + payload.substr(0, sent)), ec);
      return false;
    }
    http::response<http::string_body> res;
    res.version(req.version());
    res.result(static_cast<unsigned>(step.status));
    if (step.status == 529) res.reason("Overloaded");  // not in Beast's table
    res.set(http::field::server, "kevo-fake-llm");
    res.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : step.headers) res.set(k, v);
    res.body() = std::move(payload);
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    http::write(sock, res, ec);
    return !ec && req.keep_alive();
  }
};

FakeLlmServer::FakeLlmServer() : impl_(std::make_unique<Impl>()) {
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->accept_next();
  impl_->accept_thread = std::thread([this] { impl_->ioc.run(); });
}

FakeLlmServer::~FakeLlmServer() {
  asio::post(impl_->ioc, [this] { impl_->acceptor.close(); });
  impl_->accept_thread.join();
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    for (int fd : impl_->open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  impl_->wake.notify_all();
  for (auto& c : impl_->connections) c.thread.join();
}

std::string FakeLlmServer::base_url() const {
  return fmt::format("http://127.0.0.1:{}/v1", impl_->port);
}

void FakeLlmServer::script(std::vector<Step> steps) {
  std::lock_guard lock(impl_->mu);
  impl_->steps.assign(std::make_move_iterator(steps.begin()), std::make_move_iterator(steps.end()));
}

void FakeLlmServer::set_responder(std::function<Step(const RecordedRequest&)> f) {
  std::lock_guard lock(impl_->mu);
  impl_->responder = std::move(f);
}

std::vector<RecordedRequest> FakeLlmServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->recorded;
}

int FakeLlmServer::max_in_flight() const {
  std::lock_guard lock(impl_->mu);
  return impl_->max_in_flight;
}

}  // namespace kevo::testing
