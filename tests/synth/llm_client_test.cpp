// The LLM clients against the local fake server, for both APIs: the wire
// format, retries, timeouts, dropped connections, the concurrency limit, the
// budget, config parsing, and that the API key never leaks.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "support/fake_llm_server.h"
#include "synth/llm/client.h"

namespace kevo::llm {
namespace {

using kevo::testing::FakeLlmServer;
using kevo::testing::RecordedRequest;
using kevo::testing::Step;
using nlohmann::json;

const char* kKeyEnv = "KEVO_TEST_KEY";
const char* kKey = "sk-secret-123";

// Runs `f`, which must throw LlmError, and returns it.
template <class F>
LlmError llm_error(F&& f) {
  try {
    f();
  } catch (const LlmError& e) {
    return e;
  }
  ADD_FAILURE() << "no LlmError thrown";
  return LlmError("none", "");
}

class LlmClient : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    set_backoff_scale(0.01);
    setenv(kKeyEnv, kKey, 1);
  }
  void TearDown() override { set_backoff_scale(1); }

  bool anthropic() const { return GetParam() == "anthropic"; }

  ModelConfig model() const {
    ModelConfig m;
    m.name = "fake";
    m.api = GetParam();
    m.endpoint = server.base_url();
    m.model = "fake-model";
    m.api_key_env = kKeyEnv;
    m.timeout_s = 10;
    m.retries = 2;
    m.usd_per_mtok_in = 1;
    m.usd_per_mtok_out = 2;
    return m;
  }

  std::unique_ptr<Client> client(const ModelConfig& m) { return make_client(m, limiter, budget); }
  std::unique_ptr<Client> client() { return client(model()); }

  static Request ask(const std::string& prompt) {
    return Request{{{"system", "You write fast kernels."}, {"user", prompt}}, {}, {}};
  }

  FakeLlmServer server;
  std::shared_ptr<Limiter> limiter = std::make_shared<Limiter>(4);
  std::shared_ptr<Budget> budget = std::make_shared<Budget>(0, 0);
};

INSTANTIATE_TEST_SUITE_P(Apis, LlmClient, ::testing::Values("openai", "anthropic"),
                         [](const auto& info) { return info.param; });

// The breaker: open after `breaker_after` failed calls in a row, refusing
// calls without a request; after the cool-down one probe goes out; a failed
// probe reopens it for twice as long, an answered one closes it. (Cool-downs
// here are 20 s and 40 s scaled by the tests' backoff scale, 0.01.)
TEST_P(LlmClient, TheBreakerOpensProbesAndCloses) {
  server.script({Step::error(503, "down"), Step::error(503, "still down"), Step::reply("back")});
  ModelConfig m = model();
  m.retries = 0;
  m.breaker_after = 1;
  m.breaker_cooldown_s = 20;
  auto c = client(m);
  EXPECT_EQ(llm_error([&] { c->complete(ask("a")); }).kind, "http");
  LlmError refused = llm_error([&] { c->complete(ask("b")); });
  EXPECT_EQ(refused.kind, "breaker");
  EXPECT_NE(std::string(refused.what()).find("HTTP 503"), std::string::npos) << refused.what();
  EXPECT_EQ(server.requests().size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past 0.2 s
  EXPECT_EQ(llm_error([&] { c->complete(ask("c")); }).kind, "http");  // the probe
  EXPECT_EQ(server.requests().size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past 0.2 s, not 0.4 s
  EXPECT_EQ(llm_error([&] { c->complete(ask("d")); }).kind, "breaker");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(c->complete(ask("e")).text, "back");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_P(LlmClient, ValidReplyAndWireFormat) {
  Step s = Step::reply("```c\nint kevo_kernel(void) { return 0; }\n```");
  s.input_tokens = 120;
  s.output_tokens = 30;
  server.script({s});
  Request r = ask("Make softmax faster.");
  r.temperature = 0.25;
  Reply reply = client()->complete(r);

  EXPECT_EQ(reply.text, s.text);
  EXPECT_EQ(reply.model, "fake-model");
  EXPECT_EQ(reply.finish_reason, anthropic() ? "end_turn" : "stop");
  EXPECT_EQ(reply.input_tokens, 120);
  EXPECT_EQ(reply.output_tokens, 30);
  EXPECT_DOUBLE_EQ(reply.cost_usd, (120 * 1 + 30 * 2) / 1e6);
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(budget->tokens_used(), 150);

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const RecordedRequest& q = reqs[0];
  EXPECT_EQ(q.method, "POST");
  EXPECT_EQ(q.body, reply.request_json);
  EXPECT_EQ(q.headers.at("content-type"), "application/json");
  json body = json::parse(q.body);
  EXPECT_EQ(body["model"], "fake-model");
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_EQ(body["max_tokens"], 4096);
  if (anthropic()) {
    EXPECT_EQ(q.target, "/v1/messages");
    EXPECT_EQ(q.headers.at("x-api-key"), kKey);
    EXPECT_EQ(q.headers.at("anthropic-version"), "2023-06-01");
    EXPECT_FALSE(q.headers.count("authorization"));
    EXPECT_EQ(body["system"], "You write fast kernels.");
    EXPECT_EQ(body["messages"],
              json::parse(R"([{"role": "user", "content": "Make softmax faster."}])"));
  } else {
    EXPECT_EQ(q.target, "/v1/chat/completions");
    EXPECT_EQ(q.headers.at("authorization"), std::string("Bearer ") + kKey);
    EXPECT_FALSE(q.headers.count("x-api-key"));
    EXPECT_FALSE(body.contains("system"));
    EXPECT_EQ(body["messages"], json::parse(R"([
        {"role": "system", "content": "You write fast kernels."},
        {"role": "user", "content": "Make softmax faster."}])"));
  }
  // The key travels in a header only.
  EXPECT_EQ(reply.request_json.find(kKey), std::string::npos);
  EXPECT_EQ(reply.response_json.find(kKey), std::string::npos);
  EXPECT_EQ(request_json(model(), r), reply.request_json);
}

TEST_P(LlmClient, NoKeyHeaderWithoutKeyEnv) {
  server.script({Step::reply("hi")});
  ModelConfig m = model();
  m.api_key_env = "";
  client(m)->complete(ask("x"));
  auto q = server.requests().at(0);
  EXPECT_FALSE(q.headers.count("authorization"));
  EXPECT_FALSE(q.headers.count("x-api-key"));
}

TEST_P(LlmClient, UnsetKeyVariableIsAUserError) {
  ModelConfig m = model();
  m.api_key_env = "KEVO_TEST_KEY_THAT_IS_NOT_SET";
  unsetenv(m.api_key_env.c_str());
  EXPECT_THROW(client(m)->complete(ask("x")), UserError);
  EXPECT_TRUE(server.requests().empty());
}

TEST_P(LlmClient, RateLimitedWithRetryAfterThenSuccess) {
  server.script({Step::error(429, "slow down", {{"Retry-After", "1"}}), Step::reply("done")});
  Reply reply = client()->complete(ask("x"));
  EXPECT_EQ(reply.text, "done");
  EXPECT_EQ(reply.attempts, 2);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_P(LlmClient, RetryAfterAsHttpDate) {
  server.script({Step::error(503, "busy", {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}}),
                 Step::reply("done")});
  EXPECT_EQ(client()->complete(ask("x")).attempts, 2);
}

TEST_P(LlmClient, ServerErrorThenSuccess) {
  int overloaded = anthropic() ? 529 : 500;
  server.script({Step::error(overloaded, "try later"), Step::reply("done")});
  Reply reply = client()->complete(ask("x"));
  EXPECT_EQ(reply.attempts, 2);
  EXPECT_EQ(reply.text, "done");
}

TEST_P(LlmClient, UnauthorizedIsNotRetriedAndTheKeyIsNotEchoed) {
  // Services have been seen to quote the key they were given.
  server.script({Step::error(401, std::string("invalid API key: ") + kKey), Step::reply("never")});
  LlmError e = llm_error([&] { client()->complete(ask("x")); });
  EXPECT_EQ(e.kind, "http");
  EXPECT_EQ(e.status, 401);
  std::string what = e.what();
  EXPECT_NE(what.find("401"), std::string::npos) << what;
  EXPECT_NE(what.find("invalid API key"), std::string::npos) << what;
  EXPECT_EQ(what.find(kKey), std::string::npos) << what;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_P(LlmClient, RetriesExhausted) {
  server.script({Step::error(500, "a"), Step::error(502, "b"), Step::error(503, "c"),
                 Step::reply("too late")});
  LlmError e = llm_error([&] { client()->complete(ask("x")); });
  EXPECT_EQ(e.kind, "http");
  EXPECT_EQ(e.status, 503);
  EXPECT_EQ(server.requests().size(), 3u);  // retries = 2
}

// A 200 whose body is not the API's reply is asked again once, then a parse
// error that says how many attempts it took.
TEST_P(LlmClient, MalformedJsonIsAskedAgainOnceThenAParseError) {
  const std::string deep = "{\"choices\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  // A hostile endpoint's reply nested 100,000 deep too: a parse error, not a
  // stack that runs out.
  for (const std::string& body : {std::string("{\"choices\": ["), std::string("{\"id\": \"x\"}"), deep}) {
    server.script({Step::raw(200, body), Step::raw(200, body)});
    LlmError e = llm_error([&] { client()->complete(ask("x")); });
    EXPECT_EQ(e.kind, "parse");
    EXPECT_EQ(e.attempts, 2);
  }
  EXPECT_EQ(server.requests().size(), 6u);
  server.script({Step::raw(200, "{\"choices\": ["), Step::reply("whole")});
  Reply r = client()->complete(ask("x"));
  EXPECT_EQ(r.text, "whole");
  EXPECT_EQ(r.attempts, 2);
}

TEST_P(LlmClient, DroppedConnectionIsRetried) {
  server.script({Step::dropped(20), Step::reply("whole")});
  Reply reply = client()->complete(ask("x"));
  EXPECT_EQ(reply.text, "whole");
  EXPECT_EQ(reply.attempts, 2);
}

TEST_P(LlmClient, DroppedConnectionIsATransportError) {
  ModelConfig m = model();
  m.retries = 0;
  server.script({Step::dropped(20)});
  EXPECT_EQ(llm_error([&] { client(m)->complete(ask("x")); }).kind, "transport");
}

TEST_P(LlmClient, ConnectionRefusedIsATransportError) {
  ModelConfig m = model();
  m.retries = 1;
  {
    FakeLlmServer gone;
    m.endpoint = gone.base_url();
  }
  EXPECT_EQ(llm_error([&] { client(m)->complete(ask("x")); }).kind, "transport");
}

TEST_P(LlmClient, SlowAnswerIsATimeout) {
  ModelConfig m = model();
  m.timeout_s = 0.2;
  m.retries = 1;
  server.script({Step::delayed(1.5, "late"), Step::delayed(1.5, "late")});
  LlmError e = llm_error([&] { client(m)->complete(ask("x")); });
  EXPECT_EQ(e.kind, "timeout");
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_P(LlmClient, ResponderAnswersOnceTheScriptIsExhausted) {
  server.script({Step::reply("scripted")});
  server.set_responder([](const RecordedRequest& q) {
    return Step::reply("echo: " + kevo::testing::prompt_text(q));
  });
  auto c = client();
  EXPECT_EQ(c->complete(ask("first")).text, "scripted");
  EXPECT_EQ(c->complete(ask("second")).text, "echo: You write fast kernels.\nsecond");
}

TEST_P(LlmClient, ConcurrencyLimitIsRespected) {
  limiter = std::make_shared<Limiter>(2);
  server.set_responder([](const RecordedRequest&) { return Step::delayed(0.2, "ok"); });
  auto c = client();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] { ok += c->complete(ask("x")).text == "ok"; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 6);
  EXPECT_LE(server.max_in_flight(), 2);
}

// The server answers concurrent requests concurrently, so the limit test
// above would see a broken limiter.
TEST_P(LlmClient, ServerSeesConcurrentRequests) {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  server.set_responder([&](const RecordedRequest&) {
    std::unique_lock lock(mu);
    ++arrived;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(2), [&] { return arrived >= 3; });
    return Step::reply("ok");
  });
  auto c = client();
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { c->complete(ask("x")); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(server.max_in_flight(), 3);
}

TEST_P(LlmClient, BudgetRefusesOnceSpent) {
  budget = std::make_shared<Budget>(100, 0);
  Step s = Step::reply("a");
  s.input_tokens = 70;
  s.output_tokens = 40;
  server.script({s, Step::reply("b")});
  auto c = client();
  c->complete(ask("x"));
  EXPECT_EQ(budget->tokens_used(), 110);
  LlmError e = llm_error([&] { c->complete(ask("x")); });
  EXPECT_EQ(e.kind, "budget");
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_P(LlmClient, MoneyBudgetRefusesOnceSpent) {
  budget = std::make_shared<Budget>(0, 0.0001);
  Step s = Step::reply("a");
  s.input_tokens = 50;
  s.output_tokens = 50;  // 50 * 1 + 50 * 2 = 150 µ$ at the test's prices
  server.script({s});
  auto c = client();
  c->complete(ask("x"));
  EXPECT_DOUBLE_EQ(budget->usd_used(), 150e-6);
  EXPECT_EQ(llm_error([&] { c->complete(ask("x")); }).kind, "budget");
}

// ---- config ----------------------------------------------------------------

json good_config() {
  return json::parse(R"({
    "models": [
      {"api": "openai", "endpoint": "http://127.0.0.1:8000/v1/", "model": "qwen-coder"},
      {"name": "claude", "api": "anthropic", "model": "claude-x", "weight": 2,
       "usd_per_mtok_in": 3, "usd_per_mtok_out": 15, "retries": 1}],
    "concurrency": 8, "budget_tokens": 1000000, "cache": "only"})");
}

std::string config_error(const json& j) {
  try {
    parse_llm_config(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << j.dump();
  return "";
}

TEST(LlmConfig, ParsesWithDefaults) {
  setenv(kKeyEnv, kKey, 1);
  LlmConfig c = parse_llm_config(good_config());
  ASSERT_EQ(c.models.size(), 2u);
  const ModelConfig& local = c.models[0];
  EXPECT_EQ(local.name, "qwen-coder");
  EXPECT_EQ(local.endpoint, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(local.api_key_env, "");  // a local server needs no key
  EXPECT_EQ(local.max_tokens, 4096);
  EXPECT_EQ(local.retries, 4);
  const ModelConfig& claude = c.models[1];
  EXPECT_EQ(claude.endpoint, "https://api.anthropic.com/v1");
  EXPECT_EQ(claude.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(claude.weight, 2);
  EXPECT_EQ(claude.usd_per_mtok_out, 15);
  EXPECT_EQ(c.concurrency, 8);
  EXPECT_EQ(c.budget_tokens, 1000000);
  EXPECT_EQ(c.cache, "only");
  EXPECT_EQ(c.repair_attempts, 10);
  EXPECT_FALSE(c.prompts_dir.empty());
  // to_json parses back to the same config.
  EXPECT_EQ(parse_llm_config(c.to_json()).to_json(), c.to_json());
  EXPECT_EQ(c.to_json().dump().find(kKey), std::string::npos);
}

TEST(LlmConfig, BadValuesNameTheirPath) {
  struct Case {
    const char* pointer;
    json value;
    const char* message;
  };
  std::vector<Case> cases = {
      {"/models/1/api", "gemini", "llm.models[1].api: must be openai or anthropic"},
      {"/models/1/colour", "red", "llm.models[1].colour: unknown key"},
      {"/models/0/temperature", "hot", "llm.models[0].temperature: expected a number"},
      {"/models/0/temperature", 3.5, "llm.models[0].temperature: expected a number in [0, 2]"},
      {"/models/1/temperature", 1.5, "llm.models[1].temperature: expected a number in [0, 1]"},
      {"/models/0/max_tokens", 0, "llm.models[0].max_tokens: expected an integer in"},
      {"/models/0/timeout_s", 0, "llm.models[0].timeout_s:"},
      {"/models/0/retries", -1, "llm.models[0].retries:"},
      {"/models/0/weight", 0, "llm.models[0].weight: expected a number > 0"},
      {"/models/0/endpoint", "127.0.0.1:8000", "llm.models[0].endpoint: must be an http"},
      {"/models/0/model", "", "llm.models[0].model: must not be empty"},
      {"/models/1/name", "qwen-coder", "llm.models[1].name: duplicate model name"},
      {"/models", json::array(), "llm.models: expected a non-empty list"},
      {"/concurrency", 0, "llm.concurrency: expected an integer in [1,"},
      {"/budget_usd", -1, "llm.budget_usd:"},
      {"/cache", "maybe", "llm.cache: must be use, only or off"},
      {"/simplify_after", "3", "llm.simplify_after: expected an integer"},
      {"/temperature", 0.5, "llm.temperature: unknown key"},
  };
  for (const auto& c : cases) {
    json j = good_config();
    j[json::json_pointer(c.pointer)] = c.value;
    std::string what = config_error(j);
    EXPECT_EQ(what.rfind(c.message, 0), 0u) << c.pointer << " gave: " << what;
  }
  json no_api = good_config();
  no_api["models"][0].erase("api");
  EXPECT_EQ(config_error(no_api).rfind("llm.models[0].api: missing", 0), 0u);
  EXPECT_EQ(config_error(json::array()).rfind("llm: expected an object", 0), 0u);
}

}  // namespace
}  // namespace kevo::llm
