// The slurm backend against a real single-node Slurm (Debian's slurm-wlm and
// munge, started by tests/support/slurm_cluster.sh for each test; skipped,
// saying why, where it cannot run). A fixed-seed search gives the same
// candidates and verdicts through Slurm as on this machine; a worker that
// dies and a job cancelled mid-run are recorded results and the run goes on.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "core/process.h"
#include "core/store.h"
#include "support/test_support.h"

namespace kevo {
namespace {

class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir(std::string("slurm-") +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    SpawnOptions up;
    up.argv = {(test::source_dir() / "support" / "slurm_cluster.sh").string(), "up",
               (dir_ / "cluster").string()};
    ProcessResult r = run_process(up, 60);
    if (!r.exit_code || *r.exit_code != 0) {
      stop_cluster();  // what it started, whatever it said
      GTEST_SKIP() << "no test Slurm cluster here: "
                   << (r.timed_out ? "it did not come up within 60 s" : r.err);
    }
    conf_ = (dir_ / "cluster" / "slurm.conf").string();
    db_ = (dir_ / "kevo.db").string();
    test::store_cpu_roof(db_);
  }
  void TearDown() override {
    if (!conf_.empty()) stop_cluster();
  }
  void stop_cluster() {
    SpawnOptions down;
    down.argv = {(test::source_dir() / "support" / "slurm_cluster.sh").string(), "down",
                 (dir_ / "cluster").string()};
    run_process(down, 60);
  }

  void write_task(const std::string& strategy, const nlohmann::json& backend, int evals) {
    nlohmann::json t = {
        {"name", "swiglu-slurm"},
        {"operator", "swiglu"},
        {"shapes", {{"g", {32, 257}}}},
        {"timing", {{"min_time_ms", 2}, {"min_samples", 3}}},
        {"knobs", {{"THREADS", {1}}}},
        {"search",
         {{"strategy", strategy},
          {"families", {"naive", "stream"}},
          {"batch", 4},
          {"seed", 7},
          {"confirm", 0},
          {"stop", {{"max_evals", evals}}},
          {"backend", backend}}}};
    std::ofstream(dir_ / "task.json") << t.dump(2);
  }
  // Two evaluations, then the best re-measured in one confirmation round.
  void write_confirming_task(const nlohmann::json& backend) {
    write_task("random", backend, 2);
    nlohmann::json task = nlohmann::json::parse(std::ifstream(dir_ / "task.json"));
    task["search"]["confirm"] = 1;
    task["search"]["confirm_rounds"] = 1;
    std::ofstream(dir_ / "task.json") << task.dump(2);
  }
  nlohmann::json slurm(nlohmann::json extra = nlohmann::json::object()) const {
    nlohmann::json b = {{"kind", "slurm"}, {"dir", (dir_ / "shared").string()},
                        {"poll_s", 0.3},   {"result_grace_s", 2}};
    b.update(extra);
    return b;
  }
  // The test cluster's one node (slurm_cluster.sh names it hostname -s).
  static std::string node_name() {
    SpawnOptions h;
    h.argv = {"hostname", "-s"};
    std::string node = run_process(h, 10).out;
    node.erase(node.find_last_not_of("\n") + 1);
    return node;
  }
  // An executable /bin/sh script in the test's directory; its path.
  std::string script(const std::string& name, const std::string& body) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }
  // A worker that waits for the file "go" before it evaluates.
  std::string waiting_worker() const {
    return script("slow-kevo.sh", "while [ ! -e " + (dir_ / "go").string() +
                                      " ]; do sleep 0.2; done\nexec " +
                                      test::kevo_binary().string() + " \"$@\"\n");
  }
  ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args), {"SLURM_CONF=" + conf_}, 1 << 22);
  }
  // Per candidate of the run: its point, who proposed it, its verdict.
  std::vector<std::string> results(int64_t run) {
    Store s(db_, true);
    QueryResult q = s.query(
        "SELECT c.source_hash || ' ' || c.knobs_json || ' ' || c.synthesizer || ' ' || "
        "COALESCE(e.status, 'none') FROM candidates c LEFT JOIN candidate_results cr ON "
        "cr.candidate_id = c.id LEFT JOIN evaluations e ON e.id = cr.evaluation_id "
        "WHERE c.run_id = ? ORDER BY c.id",
        {SqlValue(run)});
    std::vector<std::string> out;
    for (const auto& row : q.rows) out.push_back(std::get<std::string>(row[0]));
    return out;
  }

  std::filesystem::path dir_;
  std::string conf_, db_;
};

TEST_F(Slurm, ASearchGivesTheSameCandidatesAndVerdictsAsOnThisMachine) {
  write_task("random", slurm(), 8);
  auto on_slurm = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(on_slurm.exit_code, 0) << on_slurm.err;
  const auto a = nlohmann::json::parse(on_slurm.out);
  EXPECT_EQ(a["backend"], "slurm");
  // The same, on this machine (a fresh store: nothing answered from the first).
  db_ = (dir_ / "local.db").string();
  test::store_cpu_roof(db_);
  auto local = kevo({"run", "task.json", "--backend", "local", "--json"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto b = nlohmann::json::parse(local.out);
  EXPECT_EQ(b["backend"], "local");
  const std::vector<std::string> here = results(b["run"]);
  db_ = (dir_ / "kevo.db").string();
  EXPECT_EQ(results(a["run"]), here);
  EXPECT_EQ(a["by_status"], b["by_status"]);
  EXPECT_EQ(a["evaluations"], 8);
  // The workers timed on the node: a time, from the node's runner.
  EXPECT_GT(a["best"]["median_s"].get<double>(), 0);
  // And profiled there, as the local run did, the candidates that ranked
  // among the best 3 when they came in (the compiler's vectorizer report on
  // this target): all until 3 times are known, then those that beat the 3rd.
  auto profiled = [&](int64_t run) {
    Store s(db_, true);
    QueryResult q = s.query(
        "SELECT COUNT(DISTINCT p.evaluation_id) FROM profiles p JOIN candidate_results cr ON "
        "cr.evaluation_id = p.evaluation_id JOIN candidates c ON c.id = cr.candidate_id "
        "WHERE c.run_id = ? AND p.metric LIKE 'cc.vec.%'",
        {SqlValue(run)});
    return std::get<int64_t>(q.rows[0][0]);
  };
  EXPECT_GE(profiled(a["run"]), 4);
  // Batches of 2 seeds, 4, then 2: the last went out with the 3rd best
  // time known as its gate, the others (fewer than 3 times known) without.
  int gated = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "shared"))
    for (const auto& f : std::filesystem::directory_iterator(e.path()))
      if (f.path().string().find(".request.json") != std::string::npos) {
        const auto req = nlohmann::json::parse(read_text_file(f.path()));
        EXPECT_TRUE(req["profile"].get<bool>()) << f.path();
        gated += req["profile_below_s"].is_number();
      }
  EXPECT_EQ(gated, 2);
}

// A worker that dies before writing its result (here: not kevo at all) is a
// crash per candidate, with Slurm's word on how the task ended; the run goes
// on to its budget.
TEST_F(Slurm, AWorkerThatDiesIsARecordedCrash) {
  write_task("random", slurm({{"kevo", "/bin/false"}}), 4);
  auto r = kevo({"run", "task.json", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // no correct kernel
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["by_status"]["crash"], 4) << j;
  EXPECT_EQ(j["stop_reason"], "reached the budget of 4 evaluations");
  Store s(db_, true);
  QueryResult q = s.query("SELECT detail FROM evaluations LIMIT 1");
  const std::string detail = std::get<std::string>(q.rows[0][0]);
  EXPECT_NE(detail.find("ended FAILED without a result"), std::string::npos) << detail;
  EXPECT_NE(detail.find("exit code 1:0"), std::string::npos) << detail;
}

// A task the cluster never starts (here: submitted held) is cancelled at
// the start timeout and recorded with the queue's reason; nothing waits
// forever.
TEST_F(Slurm, ATaskThatNeverStartsIsRecordedNotWaitedFor) {
  write_task("random", slurm({{"sbatch_options", {"--hold"}}, {"start_timeout_min", 0.05}}), 2);
  auto r = kevo({"run", "task.json", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["by_status"]["crash"], 2) << j;
  Store s(db_, true);
  QueryResult q = s.query("SELECT detail FROM evaluations LIMIT 1");
  const std::string detail = std::get<std::string>(q.rows[0][0]);
  EXPECT_NE(detail.find("was still queued 0.05 min after its submission (queue reason: "
                        "JobHeldUser): cancelled"),
            std::string::npos)
      << detail;
  // Cancelled on the cluster, not left queued.
  SpawnOptions o;
  o.argv = {"squeue", "-h"};
  o.env = {"SLURM_CONF=" + conf_};
  EXPECT_EQ(run_process(o, 10).out, "");
}

// A task killed by its time limit (a worker that hangs past it) is a
// recorded timeout, with Slurm's word on it.
TEST_F(Slurm, ATaskKilledByItsTimeLimitIsARecordedTimeout) {
  const std::string waiter = script("hang.sh", "sleep 600\n");
  // Both at once (they only sleep): the test waits for one time limit.
  write_task("random",
             slurm({{"kevo", waiter}, {"time_limit_min", 0.1}, {"exclusive", false}}), 2);
  ProcessResult r = kevo({"run", "task.json", "--json"});
  ASSERT_TRUE(r.exit_code.has_value()) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["by_status"]["timeout"], 2) << j;
  Store s(db_, true);
  QueryResult q = s.query("SELECT detail FROM evaluations LIMIT 1");
  const std::string detail = std::get<std::string>(q.rows[0][0]);
  EXPECT_NE(detail.find("ended TIMEOUT without a result"), std::string::npos) << detail;
}

// A node set DOWN under running tasks: Slurm ends them (NODE_FAIL, or puts
// them back in the queue, where nothing can run them); either way each is a
// recorded result within the start timeout, and the run ends.
TEST_F(Slurm, ANodeSetDownMidRunIsRecordedAndTheRunEnds) {
  const std::string waiter = script("hang.sh", "sleep 600\n");
  write_task("random", slurm({{"kevo", waiter}, {"start_timeout_min", 0.25}, {"exclusive", false}}),
             2);
  auto run = std::async(std::launch::async, [this] { return kevo({"run", "task.json", "--json"}); });
  auto slurm_cmd = [&](std::vector<std::string> argv) {
    SpawnOptions o;
    o.argv = std::move(argv);
    o.env = {"SLURM_CONF=" + conf_};
    return run_process(o, 10);
  };
  std::string node;
  for (int i = 0; i < 200 && node.empty(); ++i) {
    node = slurm_cmd({"squeue", "-h", "-t", "RUNNING", "-o", "%N"}).out;
    node = node.substr(0, node.find('\n'));
    if (node.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(node.empty()) << "no task ever ran";
  slurm_cmd({"scontrol", "update", "nodename=" + node, "state=down", "reason=kevo-test"});
  ProcessResult r = run.get();
  slurm_cmd({"scontrol", "update", "nodename=" + node, "state=resume"});
  ASSERT_TRUE(r.exit_code.has_value()) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["by_status"]["crash"], 2) << j;
  EXPECT_EQ(j["stop_reason"], "reached the budget of 2 evaluations");
  Store s(db_, true);
  QueryResult q = s.query("SELECT group_concat(detail, ' | ') FROM evaluations");
  const std::string details = std::get<std::string>(q.rows[0][0]);
  EXPECT_TRUE(details.find("NODE_FAIL") != std::string::npos ||
              details.find("was still queued") != std::string::npos)
      << details;
}

// A run killed (kill -9) while its tasks run on the cluster, resumed: the
// tasks it left are adopted, not submitted again, and their results count.
TEST_F(Slurm, AResumedRunAdoptsTheJobsItLeftRunning) {
  const std::string waiter = waiting_worker();
  write_task("random", slurm({{"kevo", waiter}}), 6);
  SpawnOptions o;
  o.argv = {test::kevo_binary().string(), "run", "task.json", "--json"};
  o.cwd = dir_;
  o.env = {"KEVO_DB=" + db_, "SLURM_CONF=" + conf_};
  auto first = std::make_unique<ChildProcess>(o);
  std::string running;
  for (int i = 0; i < 200 && running.empty(); ++i) {
    SpawnOptions q;
    q.argv = {"squeue", "-h", "-t", "RUNNING", "-o", "%i"};
    q.env = {"SLURM_CONF=" + conf_};
    running = run_process(q, 10).out;
    if (running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(running.empty()) << "no task ever ran";
  first->kill_group();  // kill -9: the tasks on the cluster go on
  first.reset();
  std::ofstream(dir_ / "go") << "";
  auto r = kevo({"run", "--resume", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 6) << j;
  EXPECT_EQ(j["by_status"]["ok"], 6) << j;
  // The seeds' batch was submitted once: no later batch holds their points.
  Store s(db_, true);
  QueryResult q = s.query(
      "SELECT c.source_hash || '|' || c.knobs_json FROM candidates c WHERE c.synthesizer = 'seed'");
  ASSERT_EQ(q.rows.size(), 2u);
  int holding = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "shared")) {
    const auto keys = nlohmann::json::parse(read_text_file(e.path() / "keys.json"));
    holding += std::count(keys.begin(), keys.end(), std::get<std::string>(q.rows[0][0]));
  }
  EXPECT_EQ(holding, 1);
}

// Two stores whose runs share the directory (both run 1 in their store)
// never take each other's results: the second run submits its own.
TEST_F(Slurm, RunsOfOtherStoresAreNotAdopted) {
  write_task("random", slurm(), 2);
  ASSERT_EQ(kevo({"run", "task.json"}).exit_code, 0);
  db_ = (dir_ / "other.db").string();
  test::store_cpu_roof(db_);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int batches = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "shared"))
    batches += e.path().filename().string().rfind("run-1-", 0) == 0;
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(nlohmann::json::parse(r.out)["evaluations"], 2);
}

// The confirmation rounds measure again on the cluster: a point this run
// measured is submitted anew, not answered from its earlier result file.
TEST_F(Slurm, ConfirmationRoundsAreMeasuredAgain) {
  write_confirming_task(slurm());
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(nlohmann::json::parse(r.out)["confirmations"].get<int64_t>(), 1);
  int batches = 0;
  std::vector<std::string> pinned;  // the sbatch arguments' --nodelist, per batch
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "shared")) {
    if (!std::filesystem::is_directory(e.path())) continue;
    ++batches;
    for (const auto& f : std::filesystem::directory_iterator(e.path()))
      if (f.path().extension() == ".args") {
        const std::string args = read_text_file(f.path());
        const size_t at = args.find("--nodelist=");
        pinned.push_back(at == std::string::npos
                             ? ""
                             : args.substr(at + 11, args.find(' ', at) - at - 11));
      }
  }
  EXPECT_EQ(batches, 2);  // the search's, and the confirmation's
  // The confirmation went to the node that measured the best: its rounds
  // are compared on one machine. The search went anywhere.
  const std::string node = node_name();
  std::sort(pinned.begin(), pinned.end());
  EXPECT_EQ(pinned, (std::vector<std::string>{"", node}));
}

// A confirmation pinned to a node the cluster no longer has (here: workers
// that say they ran on "ghost") is measured on any node, and said so; the
// run does not end on sbatch's refusal.
TEST_F(Slurm, AConfirmationWhoseNodeIsGoneRunsElsewhere) {
  const std::string ghost = script("ghost-kevo.sh", "SLURMD_NODENAME=ghost exec " +
                                                        test::kevo_binary().string() + " \"$@\"\n");
  write_confirming_task(slurm({{"kevo", ghost}}));
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot submit to node ghost"), std::string::npos) << r.err;
  EXPECT_GE(nlohmann::json::parse(r.out)["confirmations"].get<int64_t>(), 1);
}

// A job cancelled on the cluster mid-run (an operator's scancel) is a
// recorded result; the run goes on.
TEST_F(Slurm, AJobCancelledMidRunIsRecordedAndTheRunGoesOn) {
  // The first batch holds until the test has cancelled it: its worker waits
  // for a file that never comes.
  const std::string waiter = waiting_worker();
  write_task("random", slurm({{"kevo", waiter}}), 6);
  auto run = std::async(std::launch::async, [this] { return kevo({"run", "task.json", "--json"}); });
  // Wait for the first array to be queued or running, then cancel it whole.
  std::string job;
  for (int i = 0; i < 200 && job.empty(); ++i) {
    SpawnOptions q;
    q.argv = {"squeue", "-h", "-o", "%F"};
    q.env = {"SLURM_CONF=" + conf_};
    ProcessResult r = run_process(q, 10);
    job = r.out.substr(0, r.out.find('\n'));
    if (job.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(job.empty()) << "the run never submitted";
  SpawnOptions c;
  c.argv = {"scancel", job};
  c.env = {"SLURM_CONF=" + conf_};
  run_process(c, 10);
  std::ofstream(dir_ / "go") << "";  // the later batches run
  ProcessResult r = run.get();
  ASSERT_TRUE(r.exit_code.has_value()) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 6) << r.err;
  EXPECT_GE(j["by_status"].value("crash", 0), 1) << j;
  EXPECT_GE(j["by_status"].value("ok", 0), 1) << j;
  Store s(db_, true);
  QueryResult q = s.query("SELECT count(*) FROM evaluations WHERE detail LIKE '%ended CANCELLED%'");
  EXPECT_GE(std::get<int64_t>(q.rows[0][0]), 1);
}

// The submitting host is not calibrated: a node with no roof in the store
// calibrates its own once, and the store keeps it with the node's name;
// every result the node timed is judged against it.
TEST_F(Slurm, ANodeCalibratesItsOwnRoofAndTheStoreKeepsItWithItsName) {
  db_ = (dir_ / "bare.db").string();  // no roof at all
  write_task("random", slurm(), 4);
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("calibrating (once)"), std::string::npos) << "the submit host calibrated";
  const std::string node = node_name();
  Store s(db_, true);
  QueryResult roofs = s.query("SELECT id, hostname FROM roofs");
  ASSERT_EQ(roofs.rows.size(), 1u) << "one calibration per node type";
  const int64_t id = std::get<int64_t>(roofs.rows[0][0]);
  EXPECT_EQ(std::get<std::string>(roofs.rows[0][1]), node);
  EXPECT_NE(r.err.find("node " + node + " calibrated its roof"), std::string::npos) << r.err;
  QueryResult judged = s.query("SELECT COUNT(*) FROM evaluations WHERE status = 'ok' AND roof_id = ?",
                               {SqlValue(id)});
  EXPECT_EQ(std::get<int64_t>(judged.rows[0][0]), 4);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["best"]["roof_fraction"].get<double>(), 0);
}

// A run's own cap: with max_jobs 1 every candidate goes out alone, as the one
// before it finishes. A controller that fails to answer sbatch once (a
// stand-in that says what a busy slurmctld says, then hands over to the
// real sbatch) is asked again, not the end of the run.
TEST_F(Slurm, ARunsCapHoldsAndABusyControllerIsAskedAgain) {
  const auto bin = dir_ / "bin";
  std::filesystem::create_directories(bin);
  SpawnOptions which;
  which.argv = {"sh", "-c", "command -v sbatch"};
  std::string real = run_process(which, 10).out;
  real.erase(real.find_last_not_of("\n") + 1);
  ASSERT_FALSE(real.empty());
  const std::string once = (dir_ / "failed-once").string();
  {
    std::ofstream f(bin / "sbatch");
    f << "#!/bin/sh\nif [ ! -e " << once << " ]; then touch " << once
      << "; echo 'sbatch: error: Batch job submission failed: Socket timed out on send/recv "
         "operation' >&2; exit 1; fi\nexec "
      << real << " \"$@\"\n";
  }
  std::filesystem::permissions(bin / "sbatch", std::filesystem::perms::owner_all);
  write_task("random", slurm({{"max_jobs", 1}, {"exclusive", false}}), 4);
  const char* path = std::getenv("PATH");
  auto r = test::run_kevo(dir_, db_, {"run", "task.json", "--json"},
                          {"SLURM_CONF=" + conf_, "PATH=" + bin.string() + ":" + (path ? path : "")},
                          1 << 22);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Socket timed out"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trying again"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["evaluations"], 4);
  // One array task per sbatch: the cap of one in flight.
  int submissions = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "shared"))
    for (const auto& f : std::filesystem::directory_iterator(e.path()))
      if (f.path().extension() == ".args") {
        ++submissions;
        const std::string args = read_text_file(f.path());
        const size_t at = args.find("--array=");
        ASSERT_NE(at, std::string::npos);
        EXPECT_EQ(args.substr(at, args.find(' ', at) - at).find(','), std::string::npos) << args;
      }
  EXPECT_EQ(submissions, 4);
}

// A suite's cluster tasks are searched side by side under one cap on the
// jobs in flight: both runs are under way before any candidate has been
// evaluated (the workers wait until the test lets them go), and the cluster
// then holds exactly the cap's number of tasks, not both runs' batches.
TEST_F(Slurm, ASuiteSearchesItsTasksSideBySideUnderOneCap) {
  const std::string waiter = waiting_worker();
  write_task("random", slurm({{"kevo", waiter}, {"exclusive", false}}), 4);
  nlohmann::json task = nlohmann::json::parse(std::ifstream(dir_ / "task.json"));
  task["search"]["batch"] = 2;
  task["name"] = "one";
  std::ofstream(dir_ / "one.json") << task.dump(2);
  task["name"] = "two";
  task["shapes"] = {{"g", {16, 129}}};
  std::ofstream(dir_ / "two.json") << task.dump(2);
  std::ofstream(dir_ / "suite.json")
      << nlohmann::json{{"name", "side-by-side"},
                        {"tasks", {"one.json", "two.json"}},
                        {"cluster", {{"tasks_at_once", 2}, {"max_jobs_in_flight", 3}}}}
             .dump();
  auto batch = std::async(std::launch::async, [&] { return kevo({"batch", "suite.json", "--json"}); });
  auto array_tasks = [&] {
    SpawnOptions q;
    q.argv = {"squeue", "-h", "-r", "-o", "%i"};
    q.env = {"SLURM_CONF=" + conf_};
    const std::string out = run_process(q, 10).out;
    return static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  };
  auto runs = [&] {
    Store s(db_, true);
    return s.query("SELECT id FROM runs").rows.size();
  };
  // Both runs begun, and the cap filled, while nothing has been evaluated.
  size_t on_cluster = 0, begun = 0;
  for (int i = 0; i < 300 && (begun < 2 || on_cluster < 3); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    begun = runs();
    on_cluster = array_tasks();
  }
  EXPECT_EQ(begun, 2u) << "the second task did not begin beside the first";
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a fourth would be there by now
  EXPECT_EQ(array_tasks(), 3u) << "the cap of 3 jobs in flight did not hold";
  std::ofstream(dir_ / "go") << "";
  auto r = batch.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cluster"]["peak_jobs_in_flight"], 3) << j;
  ASSERT_EQ(j["tasks"].size(), 2u);
  for (const auto& t : j["tasks"]) {
    EXPECT_EQ(t["status"], "done") << t;
    EXPECT_EQ(t["evaluations"], 4) << t;
  }
}

}  // namespace
}  // namespace kevo
