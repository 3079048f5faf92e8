// Secrets kept out of what kevo stores: the redaction list and the store's
// use of it.
#include "core/redact.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "core/store.h"
#include "support/test_support.h"

namespace kevo {
namespace {

TEST(Redact, ReplacesEveryKnownSecretLongestFirst) {
  add_secret("tok-3f9a71c2");
  add_secret("tok-3f9a71c2-extended");  // holds the first: replaced whole
  add_secret("short");                  // under 8 characters: ordinary text
  EXPECT_EQ(redact_secrets("a tok-3f9a71c2 b tok-3f9a71c2-extended c short"),
            "a [redacted] b [redacted] c short");
  EXPECT_EQ(redact_secrets("nothing to hide"), "nothing to hide");
}

TEST(Redact, VariablesNamedLikeKeysAreSecrets) {
  setenv("KEVO_REDACT_TEST_API_KEY", "sk-redact-test-0a1b2c", 1);
  setenv("KEVO_REDACT_TEST_TOKEN", "hf-redact-test-9z8y7x", 1);
  setenv("KEVO_REDACT_TEST_MODE", "fast-and-loose-mode", 1);  // not named like a secret
  add_secrets_from_environment();
  EXPECT_EQ(redact_secrets("sk-redact-test-0a1b2c hf-redact-test-9z8y7x fast-and-loose-mode"),
            "[redacted] [redacted] fast-and-loose-mode");
  setenv("KEVO_REDACT_TEST_ODD_NAME", "named-by-api-key-env-5d", 1);
  add_secret_from_env("KEVO_REDACT_TEST_ODD_NAME");  // what an LLM config's api_key_env does
  EXPECT_EQ(redact_secrets("named-by-api-key-env-5d"), "[redacted]");
  for (const char* v : {"KEVO_REDACT_TEST_API_KEY", "KEVO_REDACT_TEST_TOKEN",
                        "KEVO_REDACT_TEST_MODE", "KEVO_REDACT_TEST_ODD_NAME"})
    unsetenv(v);
}

TEST(Redact, TheStoreKeepsNoSecret) {
  add_secret("sk-in-a-candidates-output-4e5f");
  Store store(":memory:");
  Task task = test::quick_task("swiglu", {{"g", {4, 8}}});
  const int64_t run = store.begin_run("eval", task, {{"kernel", "k.c"}});
  const int64_t cand =
      store.add_candidate(run, store.put_source("int x;", "k.c", "c"), {}, "k", "manual");
  EvalResult r;
  r.status = Status::crash;
  r.detail = "printed sk-in-a-candidates-output-4e5f";
  r.stdout_text = "key: sk-in-a-candidates-output-4e5f";
  r.stderr_text = "sk-in-a-candidates-output-4e5f\n";
  r.compile_log = "warning: sk-in-a-candidates-output-4e5f";
  const auto back = store.evaluation(store.add_evaluation(cand, r));
  ASSERT_TRUE(back.has_value());
  for (const std::string* text :
       {&back->detail, &back->stdout_text, &back->stderr_text, &back->compile_log}) {
    EXPECT_EQ(text->find("sk-in-a-candidates-output-4e5f"), std::string::npos) << *text;
    EXPECT_NE(text->find("[redacted]"), std::string::npos) << *text;
  }
  LlmCallRecord call;
  call.model = "m";
  call.endpoint = "http://127.0.0.1:1";
  call.prompt_hash = "h";
  call.prompt = "fix this: sk-in-a-candidates-output-4e5f";
  call.response = "the key was sk-in-a-candidates-output-4e5f";
  call.status = "ok";
  store.add_llm_call(call);
  const auto rec = store.recorded_llm_call("h", 0);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->prompt, "fix this: [redacted]");
  EXPECT_EQ(rec->response, "the key was [redacted]");
}

}  // namespace
}  // namespace kevo
