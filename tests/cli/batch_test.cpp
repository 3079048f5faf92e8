// kevo batch as a user runs it: a suite's defaults and overrides, one-line
// errors for a bad suite, and a batch killed with SIGKILL mid-way that
// resumes with nothing repeated and every task finished.
#include <unistd.h>

#include <csignal>
#include <fstream>

#include <gtest/gtest.h>

#include "core/process.h"
#include "core/store.h"
#include "support/test_support.h"
#include "targets/target.h"

namespace kevo {
namespace {

using nlohmann::json;

class Batch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("batch");
    db_ = (dir_ / "kevo.db").string();
    test::store_cpu_roof(db_);  // no command calibrates
    std::filesystem::create_directories(dir_ / "tasks");
    // Three small tasks of different hashes: nothing one measures answers another.
    write("tasks/a.json", R"({"operator": "swiglu", "shapes": {"g": [64, 1000]}})");
    write("tasks/b.json", R"({"operator": "swiglu", "shapes": {"g": [48, 999]}})");
    write("tasks/c.json", R"({"name": "rms", "operator": "rmsnorm", "shapes": {"x": [64, 1000]},
                              "timing": {"min_samples": 4}})");
  }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }

  SpawnOptions spawn(std::vector<std::string> args) const {
    SpawnOptions o;
    o.argv = {test::kevo_binary().string()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.cwd = dir_;
    o.env = {"KEVO_DB=" + db_};
    return o;
  }

  ProcessResult kevo(std::vector<std::string> args) const {
    return run_process(spawn(std::move(args)), 300, 1 << 20);
  }

  int64_t scalar(const std::string& sql) const {
    Store s(db_, true);
    return std::get<int64_t>(s.query(sql).rows.at(0).at(0));
  }

  std::filesystem::path dir_;
  std::string db_;
};

// Small searches: the seeds and a few random points, no confirmation, so
// that every evaluation below is one the budget counted.
const char* kSuite = R"({"name": "small", "tasks": ["tasks/*.json"],
    "defaults": {"timing": {"min_time_ms": 50, "min_samples": 3}, "knobs": {"THREADS": [1]},
                 "search": {"strategy": "random", "batch": 1, "confirm": 0,
                            "stop": {"max_evals": 4}}}})";

TEST_F(Batch, DefaultsFillInOverridesWinAndEveryTaskIsChecked) {
  write("suite.json", R"({"tasks": ["tasks/a.json", "tasks/c.json", "tasks/*.json"],
      "defaults": {"timing": {"min_time_ms": 2, "min_samples": 9}, "knobs": {"THREADS": [1]},
                   "search": {"strategy": "random", "confirm": 0, "stop": {"max_evals": 5}}},
      "overrides": {"*": {"search": {"stop": {"max_evals": 2}}},
                    "rms": {"search": {"stop": {"max_evals": 1}}}}})");
  auto r = kevo({"batch", "suite.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["batch"]["name"], "suite");  // the file's stem without a "name"
  EXPECT_EQ(j["batch"]["status"], "done");
  // Listed first, then what the glob adds (a.json and c.json once each).
  ASSERT_EQ(j["tasks"].size(), 3u);
  EXPECT_EQ(j["tasks"][0]["task"], "a");
  EXPECT_EQ(j["tasks"][1]["task"], "rms");
  EXPECT_EQ(j["tasks"][2]["task"], "b");
  for (const auto& t : j["tasks"]) EXPECT_EQ(t["status"], "done") << t.dump();
  EXPECT_EQ(j["tasks"][0]["evaluations"], 2);  // "*" over the defaults
  EXPECT_EQ(j["tasks"][1]["evaluations"], 1);  // the task's own override last
  // The task's own file wins over the suite's defaults.
  Store s(db_, true);
  auto q = s.query(
      "SELECT json_extract(config_json, '$.timing.min_samples') FROM batch_tasks "
      "ORDER BY seq");
  EXPECT_EQ(std::get<int64_t>(q.rows.at(0).at(0)), 9);
  EXPECT_EQ(std::get<int64_t>(q.rows.at(1).at(0)), 4);
  // The runs carry the batch's tag.
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM runs WHERE json_extract(config_json, '$.batch.id') = 1"),
            3);
  // The summary table on a terminal-less stdout.
  auto again = kevo({"batch", "--resume", "suite"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("speedup over seed"), std::string::npos) << again.out;
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM runs"), 3);  // a finished batch runs nothing again
}

TEST_F(Batch, BadSuitesAreOneLineErrorsNamingWhere) {
  write("none.json", R"({"tasks": ["missing/*.json"]})");
  write("unknown.json", R"({"tasks": ["tasks/a.json"], "overrides": {"zz": {}}})");
  write("badkey.json", R"({"tasks": ["tasks/a.json"], "defaults": {"timing": {"min_tme_ms": 1}}})");
  write("rename.json", R"({"tasks": ["tasks/a.json"], "overrides": {"a": {"name": "x"}}})");
  write("typo.json", R"({"task": ["tasks/a.json"]})");
  write("cap.json", R"({"tasks": ["tasks/a.json"], "cluster": {"max_jobs_in_flight": -2}})");
  write("cluster.json", R"({"tasks": ["tasks/a.json"], "cluster": {"tasks_at_one": 2}})");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"none.json", "$.tasks[0]: 'missing/*.json' matches no file"},
      {"unknown.json", "$.overrides.zz: the suite has no task of this name"},
      {"badkey.json", "task 'a'"},
      {"rename.json", "$.overrides.a.name: a suite cannot rename a task"},
      {"typo.json", "$.task: unknown key"},
      {"cap.json", "$.cluster.max_jobs_in_flight: expected a count >= 0"},
      {"cluster.json", "$.cluster.tasks_at_one: unknown key"}};
  for (const auto& [file, message] : cases) {
    auto r = kevo({"batch", file});
    EXPECT_EQ(r.exit_code, 2) << file << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  auto bad = kevo({"batch", "suite-that-is-not-read.json", "--max-jobs", "many"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-jobs: expected a count"), std::string::npos) << bad.err;
  auto r = kevo({"batch", "--resume", "nightly"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no batch 'nightly'"), std::string::npos) << r.err;
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM batches"), 0);
}

TEST_F(Batch, OneTasksErrorDoesNotStopTheOthers) {
  write("suite.json", R"({"tasks": ["tasks/b.json", "tasks/a.json"],
      "defaults": {"timing": {"min_time_ms": 2}, "knobs": {"THREADS": [1]},
                   "search": {"confirm": 0, "stop": {"max_evals": 1}}},
      "overrides": {"b": {"search": {"families": ["nope"]}}}})");
  auto r = kevo({"batch", "suite.json", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["status"], "error");
  EXPECT_NE(j["tasks"][0]["detail"].get<std::string>().find("no kernel family 'nope'"),
            std::string::npos)
      << j["tasks"][0].dump();
  EXPECT_EQ(j["tasks"][1]["status"], "done");
  // Resuming tries the failed task again and leaves the finished one be.
  auto again = kevo({"batch", "--resume", "1", "--json"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  j = json::parse(again.out);
  EXPECT_EQ(j["tasks"][0]["status"], "error");
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM evaluations"), 1);
}

// A task that found no kernel says why: how many of its candidates failed,
// and how, in the batch's JSON, its report and kevo batch's own table.
TEST_F(Batch, NoKernelTasksSayHowTheirCandidatesFailed) {
  const std::string kernels = (test::source_dir() / "eval" / "kernels").string();
  write("tasks/broken.json", R"({"name": "broken", "operator": "swiglu",
      "shapes": {"g": [64, 1000]}, "kernels": [")" + kernels + R"(/wrong.c", ")" + kernels +
                                 R"(/compile_error.c"]})");
  write("suite.json", R"({"tasks": ["tasks/broken.json"],
      "defaults": {"timing": {"min_time_ms": 2}, "search": {"strategy": "grid", "confirm": 0,
                                                             "stop": {"max_evals": 4}}}})");
  auto r = kevo({"batch", "suite.json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // not every task found a kernel
  // The table: the status with the reason the search stopped, and the failures.
  EXPECT_NE(r.out.find("no-kernel: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 compile_error, 1 mismatch"), std::string::npos) << r.out;

  auto j = kevo({"report", "batch:1", "--format", "json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json task = json::parse(j.out)["tasks"].at(0);
  EXPECT_EQ(task["status"], "no-kernel");
  EXPECT_EQ(task["failures"], json({{"compile_error", 1}, {"mismatch", 1}})) << task.dump();

  auto md = kevo({"report", "batch:1"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| failed candidates |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| 1 compile_error, 1 mismatch |"), std::string::npos) << md.out;
}

// kill -9 in the middle of the second task, then --resume: the first task
// is kept as it was, the second continues in the same run, the third runs,
// and nothing is measured twice.
TEST_F(Batch, KilledBatchResumesWithNothingRepeated) {
  write("suite.json", kSuite);
  int64_t before_kill = 0;
  {
    ChildProcess child(spawn({"batch", "suite.json"}));
    CappedBuffer out, err;
    // Killed once the second task has results of its own (the first has 4).
    for (int i = 0; i < 6000 && before_kill < 5; ++i) {  // at most 2 minutes
      child.drain(out, err);
      ASSERT_FALSE(child.try_wait()) << "finished before it was killed: " << err.text();
      usleep(20 * 1000);
      before_kill = scalar("SELECT COUNT(*) FROM evaluations");
    }
    ASSERT_GE(before_kill, 5);
    child.kill_group();
    child.wait();
    EXPECT_EQ(child.term_signal(), SIGKILL);
  }
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM batches WHERE status = 'running'"), 1);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM batch_tasks WHERE status = 'done'"), 1);
  const int64_t first_run = scalar("SELECT run_id FROM batch_tasks WHERE seq = 1");

  auto r = kevo({"batch", "--resume", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["batch"]["status"], "done");
  ASSERT_EQ(j["tasks"].size(), 3u);
  for (const auto& t : j["tasks"]) {
    EXPECT_EQ(t["status"], "done") << t.dump();
    EXPECT_EQ(t["evaluations"], 4) << t.dump();  // the budget counts the whole run
  }
  EXPECT_EQ(j["tasks"][0]["run"], first_run);
  // One run per task: the killed task continued its run, not a new one.
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM runs"), 3);
  EXPECT_EQ(scalar("SELECT COUNT(DISTINCT run_id) FROM batch_tasks"), 3);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM runs WHERE status = 'done'"), 3);
  // 4 evaluations per task, each candidate measured once, each point once per run.
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM evaluations"), 12);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM (SELECT candidate_id FROM evaluations "
                   "GROUP BY candidate_id HAVING COUNT(*) > 1)"),
            0);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM (SELECT run_id FROM candidates "
                   "GROUP BY run_id, source_hash, knobs_json HAVING COUNT(*) > 1)"),
            0);
  // What was stored before the kill is still there.
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM evaluations WHERE id <= " + std::to_string(before_kill)),
            before_kill);
  Store s(db_, true);
  EXPECT_EQ(std::get<std::string>(s.query("PRAGMA integrity_check").rows.at(0).at(0)), "ok");

  // The batch's report reads the same outcome.
  auto report = kevo({"report", "batch:1", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const json rj = json::parse(report.out);
  EXPECT_EQ(rj["kind"], "batch");
  ASSERT_EQ(rj["tasks"].size(), 3u);
  EXPECT_EQ(rj["convergence"].size(), 3u);
  for (const auto& t : rj["tasks"]) EXPECT_GT(t["best_s"].get<double>(), 0) << t.dump();
  // Each curve is relative to its task's best as the table quotes it, and
  // ends there.
  for (const auto& c : rj["convergence"]) {
    ASSERT_FALSE(c["points"].empty());
    EXPECT_DOUBLE_EQ(c["points"].back()["best_s"].get<double>(), 1.0) << c.dump();
  }
}

}  // namespace
}  // namespace kevo
