// The LLM synthesizer in a real search: kevo run talks to a local server that
// speaks the OpenAI API, its kernels are compiled, checked and timed on the
// CPU, a kernel that does not compile goes back for repair, every call is
// recorded, and a replay from the store (no network) grows the same tree.
#include <atomic>
#include <algorithm>
#include <thread>
#include <mutex>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/paths.h"
#include "core/process.h"
#include "core/task.h"
#include "search/engine.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "search/session.h"
#include "support/fake_llm_server.h"
#include "support/test_support.h"
#include "synth/llm_synthesizer.h"
#include "targets/target.h"
#include "targets/traits.h"

namespace kevo {
namespace {

using testing::FakeLlmServer;
using testing::RecordedRequest;
using testing::Step;

const char* const kSecret = "sk-kevo-test-secret-4242";

// swiglu, unrolled by a knob; `broken` adds a line that does not compile.
std::string unrolled_swiglu(bool broken) {
  std::string s = R"(// swiglu unrolled by UNROLL (written for the test's fake LLM)
// @kevo knob UNROLL 2 {1, 2, 4}
#ifndef UNROLL
#define UNROLL 2
#endif
#include <math.h>
#include "kevo_kernel.h"
KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars; (void)n_scalars;
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const int64_t n = kevo_numel(&in[0]);
  const float* g = (const float*)in[0].data;
  const float* u = (const float*)in[1].data;
  float* y = (float*)out[0].data;
  int64_t i = 0;
)";
  if (broken) s += "  this_is_not_declared = 1;\n";
  s += R"(  for (; i + UNROLL <= n; i += UNROLL)
    for (int k = 0; k < UNROLL; ++k) y[i + k] = g[i + k] / (1.0f + expf(-g[i + k])) * u[i + k];
  for (; i < n; ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
)";
  return s;
}

// Answers by what the prompt asks: an improvement of the naive seed gets a
// kernel that does not compile, a repair gets the edit that fixes it, an
// improvement of the LLM's own kernel gets an edit that does not apply.
Step answer(const RecordedRequest& r) {
  const std::string p = testing::prompt_text(r);
  if (p.find("# The kernel to repair") != std::string::npos ||
      p.find("# Repairs keep failing") != std::string::npos)
    return Step::reply(
        "Removed the stray assignment.\n<<<<<<< SEARCH\n  this_is_not_declared = 1;\n=======\n"
        ">>>>>>> REPLACE\n");
  if (p.find("# The parent kernel (naive") != std::string::npos)
    return Step::reply("Unrolled the loop.\n```c\n" + unrolled_swiglu(true) + "```\n");
  return Step::reply("<<<<<<< SEARCH\nno such line in the parent\n=======\nx\n>>>>>>> REPLACE\n");
}

// The one text column of `sql` (one "?": the run), row by row.
std::vector<std::string> strings_of_run(const std::string& db, const std::string& sql, int64_t run) {
  Store s(db, true);
  QueryResult q = s.query(sql, {SqlValue(run)});
  std::vector<std::string> out;
  for (const auto& row : q.rows) out.push_back(std::get<std::string>(row[0]));
  return out;
}

class LlmSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("llm-search");
    db_ = (dir_ / "kevo.db").string();
    test::store_cpu_roof(db_);  // no command calibrates
  }

  void write_task(const std::string& base_url, const std::string& cache = "use",
                  const nlohmann::json& llm_extra = nlohmann::json::object(), int max_evals = 8) {
    nlohmann::json task = {
        {"name", "swiglu-llm"},
        {"operator", "swiglu"},
        {"shapes", {{"g", {32, 257}}}},
        {"timing", {{"min_time_ms", 2}, {"min_samples", 3}}},
        {"search",
         {{"strategy", "mcts"},
          {"families", {"naive"}},
          {"batch", 2},
          {"confirm", 0},
          {"stop", {{"max_evals", max_evals}}},
          {"llm",
           {{"models",
             {{{"api", "openai"}, {"endpoint", base_url}, {"model", "fake-coder"},
               {"api_key_env", "KEVO_TEST_LLM_KEY"}, {"retries", 1}, {"timeout_s", 20}}}},
            {"per_batch", 2},
            {"cache", cache}}}}}};
    task["search"]["llm"].update(llm_extra);
    std::ofstream(dir_ / "task.json") << task.dump(2);
  }

  ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args), {std::string("KEVO_TEST_LLM_KEY=") + kSecret},
                          1 << 22);
  }

  // The run's tree: per candidate, what it is and where it came from.
  std::vector<std::string> tree(int64_t run) {
    return strings_of_run(
        db_,
        "SELECT c.source_hash || ' ' || c.knobs_json || ' ' || c.family || ' ' || c.synthesizer || "
        "' <- ' || COALESCE((SELECT group_concat(p.source_hash || p.knobs_json, ',') FROM lineage l "
        "JOIN candidates p ON p.id = l.parent_id WHERE l.child_id = c.id), '') "
        "FROM candidates c WHERE c.run_id = ? ORDER BY c.id",
        run);
  }

  std::filesystem::path dir_;
  std::string db_;
};

TEST_F(LlmSearch, RepairsRecordsAndReplays) {
  FakeLlmServer server;
  server.set_responder(answer);
  write_task(server.base_url());
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = nlohmann::json::parse(r.out);
  const int64_t run = summary["run"];
  ASSERT_TRUE(summary.contains("llm")) << r.out;
  const size_t asked = server.requests().size();
  EXPECT_GE(asked, 4u);
  EXPECT_EQ(summary["llm"]["calls"], static_cast<int64_t>(asked));

  Store s(db_, true);
  // Every request is a row, linked to what it made.
  QueryResult calls = s.query("SELECT count(*), sum(status = 'ok') FROM llm_calls WHERE run_id = ?",
                              {SqlValue(run)});
  EXPECT_EQ(std::get<int64_t>(calls.rows[0][0]), static_cast<int64_t>(asked));
  EXPECT_EQ(std::get<int64_t>(calls.rows[0][1]), static_cast<int64_t>(asked));
  // The kernel that did not compile, and its repair, whose parent it is.
  QueryResult broken = s.query(
      "SELECT c.id FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "WHERE c.run_id = ? AND c.synthesizer = 'llm:fake-coder' AND e.status = 'compile_error'",
      {SqlValue(run)});
  ASSERT_FALSE(broken.rows.empty());
  const int64_t broken_id = std::get<int64_t>(broken.rows[0][0]);
  QueryResult repaired = s.query(
      "SELECT e.status FROM candidates c JOIN lineage l ON l.child_id = c.id "
      "JOIN evaluations e ON e.candidate_id = c.id "
      "WHERE c.synthesizer LIKE 'llm-repair:%' AND l.parent_id = ?",
      {SqlValue(broken_id)});
  ASSERT_FALSE(repaired.rows.empty());
  EXPECT_EQ(std::get<std::string>(repaired.rows[0][0]), "ok");
  // The repair prompt carried the compiler's words.
  bool saw_error = false;
  for (const auto& req : server.requests())
    saw_error |= testing::prompt_text(req).find("this_is_not_declared") != std::string::npos &&
                 testing::prompt_text(req).find("# The error") != std::string::npos;
  EXPECT_TRUE(saw_error);

  // The key went to the server in its header, and nowhere else.
  EXPECT_EQ(server.requests()[0].headers.at("authorization"), std::string("Bearer ") + kSecret);
  EXPECT_EQ(r.out.find(kSecret), std::string::npos);
  EXPECT_EQ(r.err.find(kSecret), std::string::npos);
  for (const char* table : {"llm_calls", "runs", "evaluations", "sources", "candidates"}) {
    QueryResult all = s.query(fmt::format("SELECT * FROM {}", table));
    for (const auto& row : all.rows) {
      for (const auto& v : row) {
        const auto* t = std::get_if<std::string>(&v);
        EXPECT_TRUE(!t || t->find(kSecret) == std::string::npos) << table;
      }
    }
  }

  // Nor in the reports a user shares.
  for (const char* format : {"md", "html", "json"}) {
    auto rep = kevo({"report", std::to_string(run), "--format", format});
    EXPECT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_FALSE(rep.out.empty());
    EXPECT_EQ(rep.out.find(kSecret), std::string::npos) << format;
  }

  // The replay asks nobody and grows the same tree.
  auto again = kevo({"run", "task.json", "--replay", std::to_string(run), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server.requests().size(), asked);
  auto replay = nlohmann::json::parse(again.out);
  EXPECT_EQ(replay["llm"]["cached"], static_cast<int64_t>(asked));
  EXPECT_EQ(tree(replay["run"]), tree(run));
}

// The run's LLM calls: each prompt's hash and how the call ended.
std::vector<std::string> calls_of(const std::string& db, int64_t run) {
  return strings_of_run(
      db,
      "SELECT prompt_hash || ' ' || CASE status WHEN 'failed' THEN 'failed:' || "
      "COALESCE(failure, '') ELSE 'answered' END FROM llm_calls WHERE run_id = ? ORDER BY id",
      run);
}

// A model whose every kernel is new (a knob-declaring family of its own),
// one in three of them broken (repaired by an edit), over a space with two
// seed families and many points: the tree has LLM kernels, their repairs and
// the strategy's moves in their knobs.
Step varied_answer(const RecordedRequest& r, std::atomic<int>& n) {
  const std::string p = testing::prompt_text(r);
  if (p.find("# The kernel to repair") != std::string::npos ||
      p.find("# Repairs keep failing") != std::string::npos)
    return Step::reply("<<<<<<< SEARCH\n  this_is_not_declared = 1;\n=======\n>>>>>>> REPLACE\n");
  const int k = ++n;
  return Step::reply(fmt::format("```c\n// variant {}\n{}```\n", k, unrolled_swiglu(k % 3 == 1)));
}

class LlmReplay : public LlmSearch, public ::testing::WithParamInterface<const char*> {};

// kevo run --replay with the recording's strategy and seed grows the same
// tree: the same candidates in the same order (source, knobs, family,
// synthesizer, parents), the same prompts byte for byte in the same order,
// answered from the recording with no connection, and it ends where the
// recording ended.
TEST_P(LlmReplay, RebuildsTheTreeExactly) {
  auto server = std::make_unique<FakeLlmServer>();
  std::atomic<int> n{0};
  server->set_responder([&n](const RecordedRequest& r) { return varied_answer(r, n); });
  write_task(server->base_url(), "off", {{"per_batch", 1}}, 18);
  nlohmann::json task = nlohmann::json::parse(std::ifstream(dir_ / "task.json"));
  task["search"]["strategy"] = GetParam();
  task["search"]["families"] = {"naive", "stream"};
  task["search"]["batch"] = 3;
  task["knobs"] = {{"THREADS", {1}}};
  std::ofstream(dir_ / "task.json") << task.dump(2);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t run = nlohmann::json::parse(r.out)["run"];
  const std::vector<std::string> recorded = tree(run);
  const std::vector<std::string> recorded_calls = calls_of(db_, run);
  ASSERT_GE(recorded_calls.size(), 4u);
  // The tree holds kernels the LLM wrote, repairs of them, and the
  // strategy's own points in an LLM family's knobs.
  Store s(db_, true);
  QueryResult q = s.query(
      "SELECT sum(synthesizer LIKE 'llm:%'), sum(synthesizer LIKE 'llm-repair:%'), "
      "sum(family LIKE 'llm-%' AND synthesizer NOT LIKE 'llm%') FROM candidates WHERE run_id = ?",
      {SqlValue(run)});
  EXPECT_GE(std::get<int64_t>(q.rows[0][0]), 2);
  EXPECT_GE(std::get<int64_t>(q.rows[0][1]), 1);
  EXPECT_EQ(server->requests().size(), recorded_calls.size());

  // With the server gone: a replay connects to nothing (a call it made
  // would fail, and the replay would leave its recording there).
  server.reset();
  auto again = kevo({"run", "task.json", "--replay", std::to_string(run), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto replay = nlohmann::json::parse(again.out);
  EXPECT_TRUE(replay["replay"]["left_at"].is_null()) << replay["replay"];
  EXPECT_EQ(replay["replay"]["candidates"].get<size_t>(), recorded.size());
  // It stops where the recording stopped, for the same reason.
  EXPECT_EQ(replay["stop_reason"], nlohmann::json::parse(r.out)["stop_reason"]);
  EXPECT_EQ(tree(replay["run"]), recorded);
  EXPECT_EQ(calls_of(db_, replay["run"]), recorded_calls);
  // A replay of the replay too.
  auto third = kevo({"run", "task.json", "--replay", std::to_string(run), "--json"});
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(tree(nlohmann::json::parse(third.out)["run"]), recorded);
}

INSTANTIATE_TEST_SUITE_P(Strategies, LlmReplay, ::testing::Values("mcts", "evolution", "random"));

// A replay that cannot follow its recording says where and why: here the
// prompt template changed since, so the first LLM call's prompt differs; the
// tree up to there is the recording's.
TEST_F(LlmSearch, AReplayThatLeavesItsRecordingSaysWhereAndWhy) {
  FakeLlmServer server;
  std::atomic<int> n{0};
  server.set_responder([&n](const RecordedRequest& r) { return varied_answer(r, n); });
  const std::filesystem::path prompts = dir_ / "prompts";
  std::filesystem::copy(std::filesystem::path(KEVO_SOURCE_DIR) / "configs" / "prompts", prompts);
  write_task(server.base_url(), "off", {{"per_batch", 1}, {"prompts_dir", prompts.string()}}, 8);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t run = nlohmann::json::parse(r.out)["run"];
  const std::vector<std::string> recorded = tree(run);

  std::string improve = read_text_file(prompts / "improve.md");
  improve += "One more line that the recording's prompts did not have.\n";
  std::ofstream(prompts / "improve.md") << improve;
  auto again = kevo({"run", "task.json", "--replay", std::to_string(run)});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("left the recording of run " + std::to_string(run) + " at candidate"),
            std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("the prompt of LLM call 1 differs from the recording's: the user "
                           "message, line"),
            std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("One more line"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("left run " + std::to_string(run) + "'s recording after"),
            std::string::npos)
      << again.out;
  // What it made before is the recording's, in order.
  Store s(db_, true);
  QueryResult q = s.query("SELECT max(id) FROM runs");
  const std::vector<std::string> replayed = tree(std::get<int64_t>(q.rows[0][0]));
  ASSERT_LT(replayed.size(), recorded.size());
  EXPECT_TRUE(std::equal(replayed.begin(), replayed.end(), recorded.begin()));
}

// A second run of a task reuses what the first measured; its replay reuses
// the same and so makes the same tree, with the same budget spent.
TEST_F(LlmSearch, AReplayReusesWhatItsRecordingReused) {
  FakeLlmServer server;
  std::atomic<int> n{0};
  server.set_responder([&n](const RecordedRequest& r) { return varied_answer(r, n); });
  write_task(server.base_url(), "off", {{"per_batch", 1}}, 6);
  ASSERT_EQ(kevo({"run", "task.json"}).exit_code, 0);
  auto r = kevo({"run", "task.json", "--json", "--seed", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto first = nlohmann::json::parse(r.out);
  ASSERT_GT(first["reused"].get<int64_t>(), 0);
  auto again = kevo({"run", "task.json", "--replay", std::to_string(first["run"].get<int64_t>()),
                     "--seed", "2", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto replay = nlohmann::json::parse(again.out);
  EXPECT_TRUE(replay["replay"]["left_at"].is_null()) << replay["replay"];
  EXPECT_EQ(replay["reused"], first["reused"]) << again.out;
  EXPECT_EQ(replay["evaluations"], first["evaluations"]);
  EXPECT_EQ(tree(replay["run"]), tree(first["run"]));
}

// A model that never gets it right: its repairs stop after repair_attempts,
// and after simplify_after failures in a row it is asked for a simpler kernel.
TEST_F(LlmSearch, RepairsGiveUpAndAskForSimpler) {
  FakeLlmServer server;
  std::atomic<int> n{0};
  server.set_responder([&](const RecordedRequest& r) {
    const std::string p = testing::prompt_text(r);
    if (p.find("# The parent kernel (naive") != std::string::npos)
      return Step::reply("```c\n" + unrolled_swiglu(true) + "```\n");
    // Each wrong answer differs, so none is a duplicate of an earlier one.
    return Step::reply(fmt::format("```c\n// try {}\n{}```\n", ++n, unrolled_swiglu(true)));
  });
  write_task(server.base_url(), "use", {{"repair_attempts", 3}, {"simplify_after", 2}}, 14);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int repairs = 0, simpler = 0;
  for (const auto& req : server.requests()) {
    const std::string p = testing::prompt_text(req);
    repairs += p.find("# The kernel to repair") != std::string::npos;
    simpler += p.find("# Repairs keep failing") != std::string::npos;
  }
  EXPECT_EQ(repairs, 2);  // attempts 1 and 2
  EXPECT_EQ(simpler, 1);  // attempt 3, after two failures in a row
  Store s(db_, true);
  QueryResult q = s.query(
      "SELECT count(*) FROM candidates WHERE synthesizer LIKE 'llm-simplify:%' OR synthesizer LIKE "
      "'llm-repair:%'");
  EXPECT_EQ(std::get<int64_t>(q.rows[0][0]), 3);
}

// A kernel that reaches outside its sandbox is refused before compiling.
TEST_F(LlmSearch, SandboxEscapeIsRejected) {
  FakeLlmServer server;
  server.set_responder([](const RecordedRequest&) {
    std::string k = unrolled_swiglu(false);
    k.replace(k.find("int64_t i = 0;"), 14, "int64_t i = getenv(\"HOME\") ? 0 : 0;");
    return Step::reply("```c\n#include <stdlib.h>\n" + k + "```\n");
  });
  write_task(server.base_url(), "use", {{"repair_attempts", 0}}, 4);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Store s(db_, true);
  QueryResult q = s.query(
      "SELECT e.status, e.detail FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "WHERE c.synthesizer LIKE 'llm:%'");
  ASSERT_FALSE(q.rows.empty());
  EXPECT_EQ(std::get<std::string>(q.rows[0][0]), "rejected");
  EXPECT_NE(std::get<std::string>(q.rows[0][1]).find("getenv"), std::string::npos);
}

// A kernel whose knobs span billions of points (30 knobs of two values more) would
// hang the search while its family is enumerated: it is refused, said once
// per reply, and the search goes on.
TEST_F(LlmSearch, AKernelWithAnEnormousKnobSpaceIsRefused) {
  FakeLlmServer server;
  server.set_responder([](const RecordedRequest&) {
    std::string knobs;
    for (int i = 0; i < 30; ++i) knobs += "// @kevo knob K" + std::to_string(i) + " 0 {0, 1}\n";
    return Step::reply("```c\n" + knobs + unrolled_swiglu(false) + "```\n");
  });
  write_task(server.base_url(), "use", {{"repair_attempts", 0}}, 4);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("points; a kernel the model writes may span at most 16777216"),
            std::string::npos)
      << r.err;
  Store s(db_, true);
  QueryResult q = s.query("SELECT COUNT(*) FROM candidates WHERE synthesizer LIKE 'llm%'");
  EXPECT_EQ(std::get<int64_t>(q.rows[0][0]), 0);
}

// Once the budget is spent no more requests are made, and the search goes on.
TEST_F(LlmSearch, SpentBudgetStopsTheRequests) {
  FakeLlmServer server;
  server.set_responder([](const RecordedRequest&) {
    Step s = Step::reply("```c\n" + unrolled_swiglu(false) + "```\n");
    s.input_tokens = 900;
    s.output_tokens = 200;
    return s;
  });
  write_task(server.base_url(), "use", {{"budget_tokens", 1000}, {"per_batch", 1}}, 10);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(server.requests().size(), 1u);  // the second was refused before sending
  EXPECT_EQ(summary["llm"]["calls"], 1);
  EXPECT_EQ(summary["llm"]["failed_calls"], 1);
  EXPECT_NE(r.err.find("budget"), std::string::npos) << r.err;
  // The strategy still searched the knobs of the kernel it got.
  Store st(db_, true);
  QueryResult q = st.query("SELECT count(*) FROM candidates WHERE family LIKE 'llm-%'");
  EXPECT_EQ(std::get<int64_t>(q.rows[0][0]), 3);  // UNROLL 1, 2, 4
}

// A family that includes kevo's kernel headers is shown to the model as its
// include lines and the headers' interfaces, not their bodies; a kernel the
// model writes on the same headers is inlined, compiled, checked and stored
// as one text.
TEST_F(LlmSearch, TheModelSeesTheHeadersInterfaceAndMayUseThem) {
  const std::string child = R"(// swiglu on kevo's vector layer (written for the test's fake LLM)
#define VW 256
#include <math.h>
#include "kevo_kernel.h"
#include "kevo_cpu_vec.h"
KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars; (void)n_scalars;
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const int64_t n = kevo_numel(&in[0]);
  const float* g = (const float*)in[0].data;
  const float* u = (const float*)in[1].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0f + expf(-g[i]));
  for (int64_t i = 0; i < n; i += VL) {
    vm k = vmask_n(n - i < VL ? n - i : VL);
    VSTOREM(y + i, k, VMUL(VLOADM(y + i, k), VLOADM(u + i, k)));
  }
  return KEVO_OK;
}
)";
  FakeLlmServer server;
  server.set_responder([&](const RecordedRequest&) {
    return Step::reply("On kevo's vector layer.\n```c\n" + child + "```\n");
  });
  write_task(server.base_url());
  nlohmann::json task = nlohmann::json::parse(read_text_file(dir_ / "task.json"));
  task["search"]["families"] = {"stream"};
  std::ofstream(dir_ / "task.json") << task.dump(2);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(server.requests().empty());
  const std::string p = testing::prompt_text(server.requests()[0]);
  EXPECT_NE(p.find("#include \"kevo_cpu_exp.h\""), std::string::npos);  // the parent's line
  EXPECT_NE(p.find("vf kv_exp2(vf t)"), std::string::npos);              // the interface
  EXPECT_EQ(p.find("kv_tab32[32]"), std::string::npos);                  // not the body
  EXPECT_EQ(p.find("kevo: begin"), std::string::npos);
  // The model's kernel: stored with the header inlined, and correct.
  Store s(db_, true);
  QueryResult q = s.query(
      "SELECT e.status, src.text FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "JOIN sources src ON src.hash = c.source_hash "
      "WHERE c.run_id = ? AND c.synthesizer = 'llm:fake-coder'",
      {SqlValue(static_cast<int64_t>(nlohmann::json::parse(r.out)["run"]))});
  ASSERT_FALSE(q.rows.empty());
  EXPECT_EQ(std::get<std::string>(q.rows[0][0]), "ok");
  const std::string stored = std::get<std::string>(q.rows[0][1]);
  EXPECT_NE(stored.find("/* kevo: begin kevo_cpu_vec.h"), std::string::npos);
  EXPECT_EQ(stored.find("#include \"kevo_cpu_vec.h\""), std::string::npos);
}

// A task with a plain kernel function: the prompt asks for that function,
// and what the model writes is wrapped and measured like the seed.
TEST_F(LlmSearch, PlainEntryAsksForTheNamedFunction) {
  const std::string plain = R"(#include <math.h>
#include <stdint.h>
void swiglu_plain(float* y, const float* g, const float* u, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < rows * cols; ++j) y[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
}
)";
  std::ofstream(dir_ / "plain.c") << plain;
  FakeLlmServer server;
  server.set_responder([&](const RecordedRequest&) {
    std::string better = plain;
    better.replace(better.find("for (int64_t j"), 0, "#pragma GCC ivdep\n  ");
    return Step::reply("```c\n" + better + "```\n");
  });
  nlohmann::json task = {
      {"name", "swiglu-plain-llm"},
      {"operator", "swiglu"},
      {"shapes", {{"g", {32, 257}}}},
      {"check_shapes", nlohmann::json::array({{{"g", {7, 33}}}})},
      {"timing", {{"min_time_ms", 2}, {"min_samples", 3}}},
      {"kernels", {"plain.c"}},
      {"entry",
       {{"kind", "function"},
        {"function", "swiglu_plain"},
        {"args", {"y", "g", "u", "M", "N"}},
        {"sizes", {{"M", "g[0]"}, {"N", "g[1]"}}}}},
      {"search",
       {{"strategy", "random"},
        {"confirm", 0},
        {"stop", {{"max_evals", 3}}},
        {"llm",
         {{"models", {{{"api", "openai"}, {"endpoint", server.base_url()}, {"model", "fake-coder"},
                        {"api_key_env", ""}}}},
          {"per_batch", 1}}}}}};
  std::ofstream(dir_ / "task.json") << task.dump(2);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(server.requests().empty());
  const std::string p = testing::prompt_text(server.requests()[0]);
  EXPECT_NE(p.find("plain C function `swiglu_plain`"), std::string::npos) << p;
  EXPECT_NE(p.find("y, g, u, M, N"), std::string::npos);
  Store st(db_, true);
  QueryResult q = st.query(
      "SELECT e.status FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "WHERE c.synthesizer LIKE 'llm:%'");
  ASSERT_FALSE(q.rows.empty());
  EXPECT_EQ(std::get<std::string>(q.rows[0][0]), "ok");
}

TEST_F(LlmSearch, CacheOnlyNeverCallsAndTheSearchGoesOn) {
  FakeLlmServer server;
  server.set_responder(answer);
  write_task(server.base_url(), "only");
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(server.requests().empty());
  auto summary = nlohmann::json::parse(r.out);
  EXPECT_GT(summary["llm"]["failed_calls"].get<int64_t>(), 0);
  EXPECT_EQ(summary["llm"]["sources"], 0);
  EXPECT_GT(summary["evaluations"].get<int64_t>(), 0);
}

// A model that is down is not called for the rest of the night: after two
// failed calls in a row the breaker opens (here for an hour), the search goes
// on with the offline synthesizers, and the text summary says what failed.
TEST_F(LlmSearch, ADeadModelIsNotCalledAgainAndTheSummarySaysSo) {
  FakeLlmServer server;
  server.set_responder([](const RecordedRequest&) { return Step::error(503, "the model is down"); });
  write_task(server.base_url(), "off", {{"per_batch", 2}}, 10);
  nlohmann::json task = nlohmann::json::parse(std::ifstream(dir_ / "task.json"));
  auto& model = task["search"]["llm"]["models"][0];
  model["retries"] = 0;
  model["breaker_after"] = 2;
  model["breaker_cooldown_s"] = 3600;
  std::ofstream(dir_ / "task.json") << task.dump(2);
  auto r = kevo({"run", "task.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), 2u);  // then the breaker refused every call
  EXPECT_NE(r.err.find("2 calls in a row failed"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("llm         0 calls answered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 http"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" breaker"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the last failure: "), std::string::npos) << r.out;
  Store st(db_, true);
  QueryResult q = st.query("SELECT count(*) FROM llm_calls WHERE status = 'failed'");
  EXPECT_GT(std::get<int64_t>(q.rows[0][0]), 2);  // every refused call is a row too
  // The two calls that went out took one attempt each (retries 0); the
  // refused ones none.
  q = st.query("SELECT count(*) FROM llm_calls WHERE attempts = 1");
  EXPECT_EQ(std::get<int64_t>(q.rows[0][0]), 2);
  q = st.query("SELECT count(*) FROM llm_calls WHERE attempts IS NULL AND response LIKE '%not called%'");
  EXPECT_GT(std::get<int64_t>(q.rows[0][0]), 0);
  q = st.query("SELECT status FROM runs");
  EXPECT_EQ(std::get<std::string>(q.rows[0][0]), "done");  // the search went on to its end
}

// A key variable that is not set is one line at start, not a failure per
// batch; where the config says the LLM is optional, the run goes on without.
TEST_F(LlmSearch, AMissingKeyFailsAtStartUnlessTheLlmIsOptional) {
  FakeLlmServer server;
  server.set_responder(answer);
  write_task(server.base_url());
  nlohmann::json task = nlohmann::json::parse(std::ifstream(dir_ / "task.json"));
  task["search"]["llm"]["models"][0]["api_key_env"] = "KEVO_TEST_KEY_NOBODY_SET";
  std::ofstream(dir_ / "task.json") << task.dump(2);
  auto r = kevo({"run", "task.json"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("KEVO_TEST_KEY_NOBODY_SET is not set"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  task["search"]["llm"]["optional"] = true;
  std::ofstream(dir_ / "task.json") << task.dump(2);
  auto opt = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(opt.exit_code, 0) << opt.err;
  EXPECT_NE(opt.err.find("offline synthesizers only"), std::string::npos) << opt.err;
  EXPECT_TRUE(server.requests().empty());
  EXPECT_FALSE(nlohmann::json::parse(opt.out).contains("llm"));
}

// Every prompt tells the model the hardware: the knowledge base's sheet of
// this CPU (when kevo has one) and the roof kevo measured here.
TEST_F(LlmSearch, ThePromptCarriesTheHardwareAndTheMeasuredRoof) {
  FakeLlmServer server;
  server.set_responder(answer);
  write_task(server.base_url(), "off", {{"per_batch", 1}}, 4);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(server.requests().empty());
  const std::string p = testing::prompt_text(server.requests().front());
  EXPECT_NE(p.find("The hardware your kernel runs on"), std::string::npos) << p;
  EXPECT_NE(p.find("- Datasheet"), std::string::npos) << p;
  // The test store's roof (1000 GB/s copy, 1e6 GFLOP/s fp32_fma), as measured.
  EXPECT_NE(p.find("copy bandwidth on 1 thread: 1000.0 GB/s"), std::string::npos) << p;
  EXPECT_NE(p.find("fp32_fma peak on 1 thread: 1000000.0 GFLOP/s"), std::string::npos) << p;
}

// On the CPU the profile is what the compiler says: the prompt carries its
// vectorizer report, and the loops it did or did not vectorize as the lines
// to look at; where a run profiles nothing, the prompt says so.
TEST_F(LlmSearch, TheCpuPromptCarriesTheVectorizerReportOrSaysWhyNone) {
  FakeLlmServer server;
  server.set_responder(answer);
  write_task(server.base_url(), "off", {{"per_batch", 1}}, 3);
  auto r = kevo({"run", "task.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(server.requests().empty());
  std::string p = testing::prompt_text(server.requests().front());
  EXPECT_NE(p.find("- cc.vec.loops_vectorized = "), std::string::npos) << p;
  EXPECT_NE(p.find("the compiler vectorized"), std::string::npos) << p;  // the diagnosis
  EXPECT_NE(p.find(": a loop the compiler "), std::string::npos) << p;    // its line
  // The CPU's counters: their figures, or that the machine gave none.
  EXPECT_TRUE(p.find("- cpu.ipc = ") != std::string::npos ||
              p.find("- cpu hardware counters (cycles, instructions, cache misses): none were "
                     "read") != std::string::npos)
      << p;

  nlohmann::json task = nlohmann::json::parse(std::ifstream(dir_ / "task.json"));
  task["search"]["profile_top"] = 0;
  std::ofstream(dir_ / "task.json") << task.dump(2);
  db_ = (dir_ / "fresh.db").string();  // nothing measured (and profiled) earlier
  test::store_cpu_roof(db_);
  const size_t before = server.requests().size();
  r = kevo({"run", "task.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GT(server.requests().size(), before);
  p = testing::prompt_text(server.requests()[before]);
  EXPECT_NE(p.find("\n- not profiled: this run profiles nothing (search.profile_top is 0)\n"),
            std::string::npos)
      << p;
}

// A CUDA part's sheet from the knowledge base beside a roof: no GPU needed.
TEST(LlmHardware, AGpuSheetAndItsRoofSideBySide) {
  const std::optional<KbDoc> sheet = KnowledgeBase::open().hardware("h200");
  ASSERT_TRUE(sheet.has_value());
  Roof roof;
  roof.host_key = "NVIDIA H200 (cc 9.0) x1";
  roof.bandwidth = {{"copy", 1, 256.0 * (1 << 20), 4037}, {"copy", 1, 4096.0 * (1 << 20), 4261}};
  roof.peak = {{"bf16_tensor", 1, 790e3}, {"fp32_fma", 1, 60.6e3}};
  const std::string t = llm_hardware_text(sheet, roof);
  EXPECT_NE(t.find("Datasheet (h200)"), std::string::npos) << t;
  EXPECT_NE(t.find("sm_count 132"), std::string::npos) << t;
  EXPECT_NE(t.find("Features of the part: cp-async, mma-sync, tma, wgmma, clusters, fp8"),
            std::string::npos) << t;
  EXPECT_NE(t.find("Measured by kevo on this machine (NVIDIA H200 (cc 9.0) x1)"), std::string::npos) << t;
  EXPECT_NE(t.find("copy bandwidth on 1 thread: 4037.0 GB/s at 268 MB .. 4261.0 GB/s at 4.29e+03 MB"),
            std::string::npos) << t;
  EXPECT_NE(t.find("bf16_tensor peak on 1 thread: 790000.0 GFLOP/s"), std::string::npos) << t;
  EXPECT_NE(llm_hardware_text(std::nullopt, Roof{}).find("none in kevo's knowledge base"),
            std::string::npos);
}

// The LLM's requests are in flight while the strategy's proposals of the same
// batch are evaluated: a slow model does not stall the measurements. The
// stand-in model looks at the store when a request arrives and again before
// it answers (1.5 s later); evaluations were stored in between.
TEST_F(LlmSearch, RequestsAreInFlightWhileTheBatchIsMeasured) {
  auto stored_meanwhile = std::make_shared<std::vector<int64_t>>();
  auto m = std::make_shared<std::mutex>();
  FakeLlmServer server;
  server.set_responder([stored_meanwhile, m, db = db_](const RecordedRequest&) {
    auto evaluations = [&db] {
      Store s(db, /*read_only=*/true);
      return std::get<int64_t>(s.query("SELECT count(*) FROM evaluations").rows.at(0).at(0));
    };
    const int64_t before = evaluations();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const int64_t after = evaluations();
    std::lock_guard lock(*m);
    stored_meanwhile->push_back(after - before);
    return Step::reply("```c\n" + unrolled_swiglu(false) + "```\n");
  });
  write_task(server.base_url(), "off", {{"per_batch", 1}}, 8);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::lock_guard lock(*m);
  ASSERT_FALSE(stored_meanwhile->empty());
  EXPECT_GT(*std::max_element(stored_meanwhile->begin(), stored_meanwhile->end()), 0)
      << "no evaluation was stored while a request was in flight";
}

TEST_F(LlmSearch, BadLlmSectionIsOneLine) {
  std::ofstream(dir_ / "task.json") << R"({"operator": "swiglu", "shapes": {"g": [32, 257]},
    "search": {"llm": {"models": [{"api": "gopher", "model": "m", "endpoint": "http://127.0.0.1:9/v1"}]}}})";
  auto r = kevo({"run", "task.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("$.search.llm.models[0].api"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A config with one model (never called) and the shipped templates.
llm::LlmConfig shipped_prompts() {
  llm::LlmConfig c;
  c.models.push_back({});
  c.prompts_dir = (test::repo_dir() / "configs" / "prompts").string();
  return c;
}

TEST(LlmPrompt, UnknownPlaceholderIsRefusedAtStart) {
  auto dir = test::temp_dir("llm-prompts");
  for (const char* n : {"system", "improve", "repair", "simplify"})
    std::ofstream(dir / (std::string(n) + ".md")) << "{{op}}\n";
  std::ofstream(dir / "repair.md") << "fix {{parent_source}} and {{nonsense}}\n";
  llm::LlmConfig c;
  c.models.push_back({});
  c.prompts_dir = dir.string();
  Store store(dir / "kevo.db");
  try {
    LlmSynthesizer s(c, store, nullptr);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("repair.md"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("{{nonsense}}"), std::string::npos) << e.what();
  }
}

TEST(LlmPrompt, ShippedTemplatesCarryTheContext) {
  auto dir = test::temp_dir("llm-prompt-fill");
  llm::LlmConfig c = shipped_prompts();
  Store store(dir / "kevo.db");
  LlmSynthesizer s(c, store, nullptr);
  LlmTaskInfo t;
  t.op = "swiglu";
  t.abi = "ABI-TEXT";
  t.entry_point = "kevo_kernel";
  LlmAsk a;
  a.parent_label = "naive THREADS=1";
  a.parent_source = "PARENT-SOURCE";
  a.diagnosis = "memory-bound at 41% of the roof";
  a.hot_lines = {"line 7: 40% of the stall samples: y[i] = ..."};
  a.failures = {"attempt 1: compile_error"};
  t.extra_rules = "\n- RULE-OF-THE-TASK";
  auto m = s.prompt(t, a);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NE(m[0].content.find("ABI-TEXT"), std::string::npos);
  EXPECT_NE(m[0].content.find("- RULE-OF-THE-TASK"), std::string::npos);
  for (const char* want : {"swiglu", "PARENT-SOURCE", "41% of the roof", "line 7", "attempt 1"})
    EXPECT_NE(m[1].content.find(want), std::string::npos) << want;
  a.mode = LlmAsk::Mode::repair;
  a.error = "kernel.c:17: error: 'x' undeclared";
  m = s.prompt(t, a);
  EXPECT_NE(m[1].content.find("'x' undeclared"), std::string::npos);
}

// A language's own templates (prompts/<language>/NAME.md) replace the common
// ones for its tasks only, and are checked at start like them; a Triton
// task's prompt speaks Python: its knob syntax and rules, never C's.
TEST(LlmPrompt, ALanguagesOwnTemplatesAndKnobSyntax) {
  auto dir = test::temp_dir("llm-prompt-language");
  for (const char* n : {"system", "improve", "repair", "simplify"})
    std::ofstream(dir / (std::string(n) + ".md")) << "common " << n << ": {{knob_syntax}} {{rules}}\n";
  std::filesystem::create_directories(dir / "triton");
  std::ofstream(dir / "triton" / "system.md") << "triton system: {{knob_syntax}} {{rules}}\n";
  llm::LlmConfig c;
  c.models.push_back({});
  c.prompts_dir = dir.string();
  Store store(dir / "kevo.db");
  LlmAsk a;
  a.parent_label = "p";
  {
    LlmSynthesizer s(c, store, nullptr);
    LlmTaskInfo t;
    t.target = "triton";
    t.language = "triton";
    auto m = s.prompt(t, a);
    EXPECT_EQ(m[0].content.rfind("triton system: ", 0), 0u) << m[0].content;
    EXPECT_EQ(m[1].content.rfind("common improve: ", 0), 0u) << m[1].content;
    for (const char* want : {"# @kevo knob NAME", "module global", "tl.constexpr", ".shape"})
      EXPECT_NE(m[0].content.find(want), std::string::npos) << want << ": " << m[0].content;
    for (const char* never : {"// @kevo knob", "-D defines", "#ifndef", "shape[] and stride[]"})
      EXPECT_EQ(m[0].content.find(never), std::string::npos) << never << ": " << m[0].content;
    t.target = "cuda";
    t.language = "cuda";
    m = s.prompt(t, a);
    EXPECT_EQ(m[0].content.rfind("common system: ", 0), 0u) << m[0].content;
    EXPECT_NE(m[0].content.find("// @kevo knob NAME"), std::string::npos) << m[0].content;
    EXPECT_NE(m[0].content.find("#ifndef"), std::string::npos) << m[0].content;
  }
  std::ofstream(dir / "triton" / "repair.md") << "{{parent_source}} {{no_such_thing}}\n";
  try {
    LlmSynthesizer s(c, store, nullptr);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("triton/repair.md"), std::string::npos) << e.what();
  }
}

// The shipped Triton template and contract: what a Triton task's system
// prompt is made of (the engine quotes the target's contract file).
TEST(LlmPrompt, TheShippedTritonTemplateQuotesThePythonContract) {
  auto dir = test::temp_dir("llm-prompt-triton");
  llm::LlmConfig c = shipped_prompts();
  Store store(dir / "kevo.db");
  LlmSynthesizer s(c, store, nullptr);
  LlmTaskInfo t;
  t.op = "swiglu";
  t.target = "triton";
  t.language = "triton";
  t.entry_point = "kevo_launch";
  const TargetTraits* traits = find_target_traits("triton");
  ASSERT_TRUE(traits && traits->llm_contract);
  t.abi = read_text_file(test::repo_dir() / traits->llm_contract);
  LlmAsk a;
  a.parent_label = "stream BLOCK=4096";
  a.parent_source = "PARENT";
  const std::string system = s.prompt(t, a)[0].content;
  for (const char* want : {"```python\n# kevo_triton.py", "def kevo_launch(inputs, outputs, scalars):",
                           "KEVO_DIM_", "torch's current stream", "fenced ```python code block"})
    EXPECT_NE(system.find(want), std::string::npos) << want << "\n" << system;
  EXPECT_EQ(system.find("extern \"C\""), std::string::npos) << system;
}

// An NKI task is asked in NKI 0.4's terms: its own template, the NKI
// contract, Python knobs, no C ABI.
TEST(LlmPrompt, TheShippedNkiTemplateQuotesTheNkiContract) {
  auto dir = test::temp_dir("llm-prompt-nki");
  llm::LlmConfig c = shipped_prompts();
  Store store(dir / "kevo.db");
  LlmSynthesizer s(c, store, nullptr);
  LlmTaskInfo t;
  t.op = "rmsnorm";
  t.target = "trainium";
  t.language = "nki";
  t.entry_point = "kevo_nki";
  const TargetTraits* traits = find_target_traits("trainium");
  ASSERT_TRUE(traits && traits->llm_contract);
  t.abi = read_text_file(test::repo_dir() / traits->llm_contract);
  LlmAsk a;
  a.parent_label = "rows P=128";
  a.parent_source = "PARENT";
  const std::string system = s.prompt(t, a)[0].content;
  for (const char* want : {"NKI 0.4", "```python\n# kevo_nki.py", "def kevo_nki(x, w, eps):",
                           "buffer=nl.shared_hbm", "fenced ```python code block"})
    EXPECT_NE(system.find(want), std::string::npos) << want << "\n" << system;
  EXPECT_EQ(system.find("extern \"C\""), std::string::npos) << system;
}

// Retrieval for the part at hand: a pattern that needs TMA or wgmma reaches
// the prompt for an H200 (its sheet has them) and not for an A100, and
// patterns for the parent's bottleneck come before others.
TEST(LlmPrompt, PatternsFollowTheSheetsFeaturesAndTheBottleneck) {
  auto dir = test::temp_dir("llm-prompt-features");
  llm::LlmConfig c = shipped_prompts();
  c.knowledge = 3;
  Store store(dir / "kevo.db");
  const KnowledgeBase kb = KnowledgeBase::open();
  LlmSynthesizer s(c, store, &kb);
  LlmTaskInfo t;
  t.op = "gemm";
  t.target = "cuda";
  LlmAsk a;
  a.parent_label = "mma BM=128";
  a.parent_source = "PARENT";
  a.bound = "compute";
  a.bottleneck = "compute";
  a.diagnosis = "compute-bound at 40% of the bf16 tensor peak: warpgroup wgmma with TMA loads "
                "would feed the tensor cores";
  // The ids of the patterns the prompt carries (each under "### TITLE (ID)").
  auto retrieved = [&](const char* part) {
    t.features = kb.hardware(part)->features;
    std::istringstream in(s.prompt(t, a)[1].content);
    std::vector<std::string> ids;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("### ", 0) == 0 && line.back() == ')')
        ids.push_back(line.substr(line.rfind('(') + 1, line.size() - line.rfind('(') - 2));
    return ids;
  };
  auto has = [](const std::vector<std::string>& v, const char* id) {
    return std::find(v.begin(), v.end(), id) != v.end();
  };
  const std::vector<std::string> h200 = retrieved("h200"), a100 = retrieved("a100");
  EXPECT_TRUE(has(h200, "cuda-wgmma-tiling")) << fmt::format("{}", fmt::join(h200, ", "));
  EXPECT_FALSE(has(a100, "cuda-wgmma-tiling")) << fmt::format("{}", fmt::join(a100, ", "));
  EXPECT_FALSE(has(a100, "cuda-tma-bulk-copy")) << fmt::format("{}", fmt::join(a100, ", "));
  // An A100 still gets as many patterns, for what it has; each one retrieved
  // for a compute bottleneck is tagged for it.
  EXPECT_EQ(a100.size(), 3u);
  for (const auto* ids : {&h200, &a100})
    for (const std::string& id : *ids) {
      const std::optional<KbDoc> d = kb.get(id);
      ASSERT_TRUE(d.has_value()) << id;
      EXPECT_TRUE(std::count(d->bounds.begin(), d->bounds.end(), "compute") ||
                  std::count(d->bounds.begin(), d->bounds.end(), "any"))
          << id;
      for (const std::string& need : d->needs)
        EXPECT_TRUE(ids == &h200 || need == "cp-async" || need == "mma-sync") << id;
    }
}

// The example configs of the README read as they are (no network needed).
TEST(LlmConfigs, ShippedExamplesParse) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::repo_dir() / "configs" / "llm")) {
    Task t = load_task(e.path());
    SearchConfig c = parse_search_config(t.search, "$.search");
    EXPECT_FALSE(c.llm.is_null()) << e.path();
    llm::LlmConfig l = llm::parse_llm_config(c.llm, "$.search.llm");
    EXPECT_FALSE(l.models.empty()) << e.path();
    ++n;
  }
  EXPECT_GE(n, 2);
}

}  // namespace
}  // namespace kevo
