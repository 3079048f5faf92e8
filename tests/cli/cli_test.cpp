// The kevo binary as a user runs it: exit codes, one-line errors, --help,
// --json, and what it stores.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/process.h"
#include "core/store.h"
#include "support/test_support.h"
#include "targets/runner/sandbox.h"
#include "targets/target.h"

namespace kevo {
namespace {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("cli");
    db_ = (dir_ / "kevo.db").string();
    // A stored roof for this machine spares each eval the calibration.
    test::store_cpu_roof(db_);  // no command calibrates
    write("task.json", R"({"operator": "swiglu", "shapes": {"g": [32, 257]},
                           "timing": {"min_time_ms": 2, "min_samples": 3}})");
  }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }

  ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args));
  }

  std::string kernel(const std::string& name) {
    return (test::source_dir() / "eval" / "kernels" / (name + ".c")).string();
  }

  std::filesystem::path dir_;
  std::string db_;
};

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST_F(Cli, HelpListsTheCommands) {
  auto r = kevo({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  const std::vector<std::string> commands = {"run",   "eval",   "calibrate", "query",  "targets",
                                             "operators", "knobs", "tree", "bench", "kb",
                                             "export", "compare", "explain", "batch", "report"};
  for (const auto& c : commands) EXPECT_NE(r.out.find("  " + c + " "), std::string::npos) << c;
  for (const auto& c : commands) {
    auto h = kevo({c, "--help"});
    EXPECT_EQ(h.exit_code, 0) << c;
    EXPECT_NE(h.out.find("usage: kevo "), std::string::npos) << c;
  }
}

TEST_F(Cli, BadInputIsOneLineAndExitTwo) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"frobnicate"}, {"eval", kernel("right")},
        {"eval", "--task", "missing.json", kernel("right")}, {"eval", "--bogus"},
        {"eval", "--task", "task.json", kernel("right"), "--knob", "VEC"},
        {"eval", "--task", "task.json", kernel("right"), "--knob", "VEC=4"},
        {"query", "SELEKT 1"}, {"calibrate", "--target", "tpu"}, {"knobs", "nope.c"}}) {
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("kevo: ", 0), 0u) << r.err;
  }
}

TEST_F(Cli, ConfigErrorsNameTheJsonPath) {
  write("bad.json", R"({"operator": "swiglu", "shapes": {"g": [32, 257]}, "timing": {"min_tme_ms": 2}})");
  auto r = kevo({"eval", "--task", "bad.json", kernel("right")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("$.timing.min_tme_ms: unknown key"), std::string::npos) << r.err;
  write("syntax.json", "{\"operator\": \n\"swiglu\",, }");
  r = kevo({"eval", "--task", "syntax.json", kernel("right")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("syntax.json:2:"), std::string::npos) << r.err;
}

TEST_F(Cli, EvalPrintsAVerdictAndStoresIt) {
  auto r = kevo({"eval", "--task", "task.json", kernel("right")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict   ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median"), std::string::npos);
  EXPECT_NE(r.out.find("roofline"), std::string::npos);

  auto q = kevo({"query", "SELECT e.status, c.family, COUNT(s.seq) AS n FROM evaluations e "
                          "JOIN candidates c ON c.id = e.candidate_id "
                          "JOIN samples s ON s.evaluation_id = e.id GROUP BY e.id",
                 "--json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "ok");
  EXPECT_EQ(rows[0]["family"], "right");
  EXPECT_GE(rows[0]["n"].get<int>(), 3);

  auto csv = kevo({"query", "SELECT status, family FROM evaluations JOIN candidates "
                            "ON candidates.id = candidate_id", "--csv"});
  EXPECT_EQ(csv.out, "status,family\nok,right\n");
  auto table = kevo({"query", "SELECT status FROM evaluations"});
  EXPECT_NE(table.out.find("(1 row)"), std::string::npos) << table.out;
}

// Samples taken while another process had the runner's CPU are not
// believed on their first word: kevo reads how long the runner waited for a
// CPU while it timed (/proc/PID/schedstat), measures again, and a figure
// still disturbed says so. The neighbour: one busy process on the one CPU
// kevo is given, bounded by an alarm and killed at the end.
TEST_F(Cli, AMeasurementUnderContentionIsTakenAgainAndSaysSo) {
  if (!std::filesystem::exists("/proc/self/schedstat"))
    GTEST_SKIP() << "this kernel keeps no /proc/PID/schedstat (CONFIG_SCHED_INFO off): kevo "
                    "cannot see contention here";
  cpu_set_t before, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  const pid_t hog = fork();
  ASSERT_GE(hog, 0);
  if (hog == 0) {
    sched_setaffinity(0, sizeof one, &one);
    alarm(120);  // gone even if this test is
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // kevo and its runner inherit it
  write("long.json", R"({"operator": "swiglu", "shapes": {"g": [64, 4096]},
                         "timing": {"min_time_ms": 200, "min_samples": 5}})");
  auto r = kevo({"eval", "--task", "long.json", kernel("right"), "--json"});
  sched_setaffinity(0, sizeof before, &before);
  kill(hog, SIGKILL);
  waitpid(hog, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out)["result"];
  double wait = -1;
  for (const auto& m : j["profile"])
    if (m["metric"] == "machine.cpu_wait_pct") wait = m["value"].get<double>();
  EXPECT_GT(wait, 10) << j.dump(2);
  EXPECT_NE(j["detail"].get<std::string>().find("waited for a CPU"), std::string::npos)
      << j.dump(2);
}

TEST_F(Cli, EvalJsonAndFailingVerdicts) {
  auto r = kevo({"eval", "--task", "task.json", kernel("wrong"), "--json"});
  EXPECT_EQ(r.exit_code, 1);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["status"], "mismatch");
  EXPECT_FALSE(j["result"]["checks"].back()["passed"].get<bool>());
  auto c = kevo({"eval", "--task", "task.json", kernel("segfault")});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("verdict   crash"), std::string::npos) << c.out;
}

TEST_F(Cli, KnobsOperatorsTargets) {
  write("k.c", "// @kevo knob A 2 {1, 2, 4}\n// @kevo knob B 1 {1, 2}\n// @kevo require A * B <= 4\n");
  auto k = kevo({"knobs", "k.c", "--json"});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  auto j = nlohmann::json::parse(k.out);
  EXPECT_EQ(j["points"], 6);
  EXPECT_EQ(j["valid_points"], 5);
  auto o = kevo({"operators", "--json"});
  ASSERT_EQ(o.exit_code, 0);
  auto ops = nlohmann::json::parse(o.out);
  EXPECT_EQ(ops.size(), 7u);
  auto t = kevo({"targets"});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("cpu       available"), std::string::npos) << t.out;
  // What confines a candidate's runner here, one line per target.
  const std::string line =
      runner::containment_line(runner::probe_containment(runner::FilterProfile::cpu));
  EXPECT_EQ(line.rfind("environment clean · ", 0), 0u) << line;
  EXPECT_NE(t.out.find("          containment: " + line + "\n"), std::string::npos) << t.out;
  auto tj = nlohmann::json::parse(kevo({"targets", "--json"}).out);
  ASSERT_EQ(tj[0]["name"], "cpu");
  ASSERT_EQ(tj[0]["containment"].size(), 5u) << tj.dump();
  EXPECT_EQ(tj[0]["containment"][3]["name"], "seccomp");
  EXPECT_EQ(tj[0]["containment_line"], line);
}

TEST_F(Cli, CalibrateMeasuresAndStores) {
  auto r = kevo({"calibrate", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["bandwidth"].empty());
  for (const auto& p : j["bandwidth"]) EXPECT_GT(p["gbps"].get<double>(), 0);
  ASSERT_FALSE(j["peak"].empty());
  EXPECT_GT(j["peak"][0]["gflops"].get<double>(), 0);
  auto q = kevo({"query", "SELECT COUNT(*) AS n FROM roofs", "--json"});
  EXPECT_EQ(nlohmann::json::parse(q.out)[0]["n"], 2);
}

// A small real search: swiglu's families on a small shape.
const char* kSearchTask = R"({"operator": "swiglu", "shapes": {"g": [64, 1000]},
    "timing": {"min_time_ms": 2, "min_samples": 3},
    "knobs": {"THREADS": [1]},
    "search": {"strategy": "evolution", "batch": 2, "stop": {"max_evals": 6}}})";

TEST_F(Cli, RunSearchesStoresAndWritesTheBest) {
  write("search.json", kSearchTask);
  auto r = kevo({"run", "search.json", "-o", "best.c", "--dot", "tree.dot", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 6);
  ASSERT_FALSE(j["best"].is_null());
  ASSERT_FALSE(j["seed"].is_null());
  EXPECT_EQ(j["best"]["confirmed"], true);
  EXPECT_GE(j["confirmations"].get<int64_t>(), 2);
  EXPECT_GE(j["speedup_over_seed"].get<double>(), 1.0);
  // Where the time went is reported (its size is a benchmark's business).
  for (const char* k : {"wall_s", "compile_s", "run_s", "searcher_s", "store_s", "overhead_share"})
    EXPECT_TRUE(j.contains(k)) << k;
  // The best file stands alone: kevo eval of it (no knobs left to set) is ok
  // and runs the baked-in point.
  auto e = kevo({"eval", "--task", "search.json", "best.c", "--json"});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  EXPECT_TRUE(nlohmann::json::parse(e.out)["knobs"].empty());
  // It keeps the shape it was searched at for a build outside kevo, unless
  // the compiler defines another.
  std::ifstream best(dir_ / "best.c");
  std::string best_text((std::istreambuf_iterator<char>(best)), {});
  EXPECT_NE(best_text.find("#ifndef KEVO_LAST_g\n#define KEVO_LAST_g 1000\n#endif"),
            std::string::npos)
      << best_text.substr(0, 1200);
  std::ifstream dot(dir_ / "tree.dot");
  std::string text((std::istreambuf_iterator<char>(dot)), {});
  EXPECT_NE(text.find("digraph"), std::string::npos);
  auto t = kevo({"tree", std::to_string(j["run"].get<int64_t>())});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("digraph"), std::string::npos);
  // The best's node quotes the figure the run reports for it: its
  // confirmation's, marked, with the search's beside it.
  const std::string best_id = "#" + std::to_string(j["best"]["candidate"].get<int64_t>()) + " ";
  const size_t node = t.out.find(best_id);
  ASSERT_NE(node, std::string::npos) << t.out;
  const std::string label = t.out.substr(node, t.out.find(']', node) - node);
  EXPECT_NE(label.find("confirmed (search "), std::string::npos) << label;
  // Another run of the same task answers from the store: nothing re-measured
  // that the first run measured.
  auto again = kevo({"run", "search.json", "--strategy", "grid", "--max-evals", "3", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto j2 = nlohmann::json::parse(again.out);
  EXPECT_GT(j2["reused"].get<int64_t>(), 0);
  EXPECT_EQ(j2["evaluations"], 3);
  // A replay of the first run answers from its recording, charging each point.
  auto replay = kevo({"run", "search.json", "--replay", std::to_string(j["run"].get<int64_t>()),
                      "--strategy", "random", "--max-evals", "4", "--json"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  auto j3 = nlohmann::json::parse(replay.out);
  EXPECT_EQ(j3["evaluations"], 4);
  EXPECT_EQ(j3["backend"], "replay");
  // Every answer came from the recording: nothing was measured again, and
  // each answer's status is one the recording has (a point the first run
  // measured suspect on a loaded machine is suspect in the replay too).
  EXPECT_EQ(j3["reused"], 0);
  int64_t answered = 0;
  for (const auto& [status, n] : j3["by_status"].items()) {
    EXPECT_TRUE(j["by_status"].contains(status))
        << status << " is not among the recording's: " << j["by_status"].dump();
    answered += n.get<int64_t>();
  }
  EXPECT_EQ(answered, 4) << j3["by_status"].dump();
}

// A family's start that reads a device fact (SMS) is skipped where the
// target gives none (the CPU), and a run keeps the facts it had in its
// config: a replay here proposes the starts the recorded device allowed.
TEST_F(Cli, AReplayProposesTheStartsOfTheRecordedDevice) {
  std::ifstream naive(test::repo_dir() / "targets" / "cpu" / "kernels" / "swiglu" / "naive.c");
  std::string text((std::istreambuf_iterator<char>(naive)), {});
  write("k.c", text + "// @kevo knob SPARE 1 {1, 2, 3}\n// @kevo start SPARE = SMS / 64\n");
  write("own.json", R"({"operator": "swiglu", "shapes": {"g": [64, 1000]}, "kernels": ["k.c"],
      "timing": {"min_time_ms": 2, "min_samples": 3}, "knobs": {"THREADS": [1]},
      "search": {"strategy": "grid", "batch": 3, "confirm": 0}})");
  auto r = kevo({"run", "own.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("SMS (the GPU's streaming multiprocessors) is not known here"), std::string::npos)
      << r.err;
  const int64_t run = nlohmann::json::parse(r.out)["run"].get<int64_t>();
  auto starts = [&](int64_t id) {
    Store s(db_, true);
    return s.query(fmt::format("SELECT knobs_json FROM candidates WHERE run_id = {} AND "
                               "synthesizer = 'start'", id)).rows;
  };
  EXPECT_TRUE(starts(run).empty());
  {
    Store s(db_);
    auto config = nlohmann::json::parse(std::get<std::string>(
        s.query(fmt::format("SELECT config_json FROM runs WHERE id = {}", run)).rows.at(0).at(0)));
    EXPECT_EQ(config["start_facts"], nlohmann::json::object());  // the CPU says nothing
    config["start_facts"] = {{"SMS", 132}};  // as a run on an H200 keeps it
    s.query("UPDATE runs SET config_json = ? WHERE id = ?",
            std::vector<SqlValue>{SqlValue(config.dump()), SqlValue(run)});
  }
  auto replay = kevo({"run", "own.json", "--replay", std::to_string(run), "--strategy", "random",
                      "--max-evals", "3", "--json"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const auto rows = starts(nlohmann::json::parse(replay.out)["run"].get<int64_t>());
  ASSERT_EQ(rows.size(), 1u) << replay.err;
  EXPECT_EQ(nlohmann::json::parse(std::get<std::string>(rows.at(0).at(0)))["SPARE"], 2);  // 132 / 64
}

// The drift line says what the machine's state read at the two timings of
// the default point that moved most. The CPU runner reads the host's load and
// clock, which a test cannot predict; a trigger stores a figure it can, a GPU
// temperature (which this target never reads) rising with every evaluation.
TEST_F(Cli, RunDriftLineSaysWhatTheMachineRead) {
  {
    Store s(db_);
    s.query(
        "CREATE TRIGGER machine_state AFTER INSERT ON evaluations WHEN NEW.median_s IS NOT NULL "
        "BEGIN INSERT INTO profiles(evaluation_id, metric, value, unit) "
        "VALUES (NEW.id, 'machine.gpu_temp_c', 30 + NEW.id, 'C'); END");
  }
  write("search.json", kSearchTask);
  auto r = kevo({"run", "search.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t drift = r.out.find("\ndrift ");
  ASSERT_NE(drift, std::string::npos) << r.out;
  const std::string line = r.out.substr(drift + 1, r.out.find('\n', drift + 1) - drift - 1);
  EXPECT_NE(line.find("'s two timings: "), std::string::npos) << line;
  EXPECT_NE(line.find("GPU 3"), std::string::npos) << line;
  Store s(db_, true);
  auto summary = nlohmann::json::parse(
      std::get<std::string>(s.query("SELECT summary_json FROM runs").rows.at(0).at(0)));
  ASSERT_FALSE(summary["drift"].empty());
  for (const auto& d : summary["drift"])
    EXPECT_LT(d["machine_search"]["machine.gpu_temp_c"].get<double>(),
              d["machine_confirmed"]["machine.gpu_temp_c"].get<double>())
        << d;
}

// kevo run's runner-up line gives the verdict the summary stores, with the
// confirmation rounds of both; which verdict a real CPU gives cannot be
// predicted, so the line is held to the stored figures.
TEST_F(Cli, RunSaysWhetherTheBestHeldAgainstTheRunnerUp) {
  write("search.json", kSearchTask);
  auto r = kevo({"run", "search.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Store s(db_, true);
  auto summary = nlohmann::json::parse(
      std::get<std::string>(s.query("SELECT summary_json FROM runs").rows.at(0).at(0)));
  ASSERT_TRUE(summary.contains("runner_up")) << summary.dump();
  const auto& ru = summary["runner_up"];
  EXPECT_NE(ru["candidate"], summary["best"]["candidate"]);
  // Three confirmation rounds ran; the verdict pairs those in which both
  // have a time. On a loaded machine a round can come back suspect (a time
  // below the floor: no figure), and it is left out of the pairing.
  EXPECT_EQ(summary["confirm_rounds_run"], 3);
  EXPECT_GE(ru["rounds"].get<int64_t>(), 1);
  EXPECT_LE(ru["rounds"].get<int64_t>(), 3);
  const size_t at = r.out.find("\nrunner-up ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find(fmt::format("(candidate {})", ru["candidate"].get<int64_t>())), std::string::npos) << line;
  EXPECT_NE(line.find(ru["verdict"] == "apart" ? "apart in every round" : "inconclusive:"), std::string::npos)
      << line;
  if (ru["verdict"] != "apart") {
    EXPECT_NE(line.find(fmt::format("of {} rounds", ru["rounds"].get<int64_t>())), std::string::npos) << line;
  }
  EXPECT_NE(line.find("confirmation rounds: best "), std::string::npos) << line;
}

// How kevo ended with nobody reading its stdout.
struct ClosedStdout {
  int exit_code = -1;  // -1: ended by a signal
  int signal = 0;
  std::string err;
};

// Runs kevo with a stdout pipe whose read end is closed before kevo starts,
// as `kevo ... | head` is once head has left: every write kevo makes to its
// stdout fails with EPIPE (or raises SIGPIPE), whatever the timing.
ClosedStdout run_with_stdout_closed(const std::filesystem::path& dir, const std::string& db,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {test::kevo_binary().string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = {"KEVO_DB=" + db};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("KEVO_DB=", 0) != 0) env_s.emplace_back(*e);
  std::vector<char*> env;
  for (auto& e : env_s) env.push_back(e.data());
  env.push_back(nullptr);

  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {};
  close(out[0]);  // no reader, ever
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);  // as a shell starts it
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), env.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  ClosedStdout r;
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) != 0;)
    if (n > 0) r.err.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

// `kevo export RUN | head` and the like: a reader that leaves early ends kevo
// quietly, as SIGPIPE ends other Unix tools (status 141 in a shell), with no
// "internal error". Short outputs (still buffered when kevo ends) and long
// ones (failing mid-write) alike.
TEST_F(Cli, ClosedStdoutEndsQuietly) {
  write("search.json", R"({"operator": "swiglu", "shapes": {"g": [64, 1000]},
      "timing": {"min_time_ms": 2, "min_samples": 3}, "knobs": {"THREADS": [1]},
      "search": {"strategy": "grid", "stop": {"max_evals": 2}}})");
  auto run = kevo({"run", "search.json", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = std::to_string(nlohmann::json::parse(run.out)["run"].get<int64_t>());
  const std::string many_rows =
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000) "
      "SELECT i FROM n";
  // Longer than any pipe or stdio buffer: kevo is still writing when it fails.
  ASSERT_GT(kevo({"query", many_rows}).out.size(), 64u * 1024);

  const std::vector<std::vector<std::string>> commands = {
      {"--help"},       {"--version"}, {"operators"},       {"export", id},
      {"export", id, "--format", "t4"}, {"report", id}, {"query", many_rows},
  };
  for (const auto& args : commands) {
    const ClosedStdout r = run_with_stdout_closed(dir_, db_, args);
    const std::string what = "kevo " + args[0];
    EXPECT_TRUE(r.exit_code == 128 + SIGPIPE || r.signal == SIGPIPE)
        << what << ": exit " << r.exit_code << ", signal " << r.signal << "\n" << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what << ": " << r.err;
    EXPECT_EQ(r.err.find("Broken pipe"), std::string::npos) << what << ": " << r.err;
  }
}

TEST_F(Cli, RunRejectsBadInputWithOneLine) {
  write("bad.json", R"({"operator": "swiglu", "shapes": {"g": [8, 8]},
                        "search": {"strategy": "evolution", "params": {"islandz": 2}}})");
  auto r = kevo({"run", "bad.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("islandz"), std::string::npos) << r.err;
  auto n = kevo({"run"});
  EXPECT_EQ(n.exit_code, 2);
  auto q = kevo({"run", "--resume", "99"});
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_NE(q.err.find("no run 99"), std::string::npos) << q.err;
}

int64_t scalar(Store& s, const std::string& sql) {
  auto r = s.query(sql);
  return std::get<int64_t>(r.rows.at(0).at(0));
}

// A task tuned for two shapes: each is checked and timed, the objective is
// their weighted geometric mean, and the summary, eval, explain and the
// report show each shape's figures beside the run's fastest at that shape.
TEST_F(Cli, ATaskWithTwoTimedShapesSearchesForTheirWeightedGeometricMean) {
  write("two.json", R"({"operator": "swiglu", "shapes": [{"g": [64, 1000]}, {"g": [16, 3000]}],
      "shape_weights": [1, 3], "timing": {"min_time_ms": 2, "min_samples": 3},
      "knobs": {"THREADS": [1]},
      "search": {"strategy": "evolution", "batch": 2, "stop": {"max_evals": 4}}})");
  auto r = kevo({"run", "two.json", "--per-shape", "per-shape", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("shapes")) << r.out;
  ASSERT_EQ(j["shapes"].size(), 2u);
  EXPECT_EQ(j["shapes"][0]["shape"], "[64, 1000]");
  EXPECT_EQ(j["shapes"][1]["weight"], 3.0);
  for (const auto& row : j["shapes"]) {
    ASSERT_TRUE(row.contains("chosen")) << row.dump();
    ASSERT_TRUE(row.contains("best")) << row.dump();
    // The fastest at a shape is at least as fast there as the chosen kernel.
    EXPECT_LE(row["best"]["median_s"].get<double>(), row["chosen"]["median_s"].get<double>());
  }
  ASSERT_EQ(j["per_shape_files"].size(), 2u);
  for (const auto& f : j["per_shape_files"]) EXPECT_TRUE(std::filesystem::exists(dir_ / f.get<std::string>()));

  // Every ok evaluation's median is the weighted geometric mean of its
  // shapes' medians, as stored.
  Store store(db_, true);
  const QueryResult q = store.query(
      "SELECT e.median_s, "
      "(SELECT value FROM profiles WHERE evaluation_id = e.id AND metric = 'shape.0.median_s'), "
      "(SELECT value FROM profiles WHERE evaluation_id = e.id AND metric = 'shape.1.median_s') "
      "FROM evaluations e WHERE e.status = 'ok'");
  ASSERT_FALSE(q.rows.empty());
  for (const auto& row : q.rows) {
    const double m = std::get<double>(row[0]), a = std::get<double>(row[1]),
                 b = std::get<double>(row[2]);
    EXPECT_NEAR(m, std::exp((std::log(a) + 3 * std::log(b)) / 4), 1e-9 * m);
  }

  // kevo eval: every shape checked and timed, each on its own line.
  auto e = kevo({"eval", "--task", "two.json", kernel("right")});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  EXPECT_NE(e.out.find("weighted geometric mean of the shapes' medians"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("per shape [64, 1000]: median"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("[16, 3000]: median"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("over 2 timed shapes"), std::string::npos) << e.out;
  // A kernel right at the first shape and wrong at the second is wrong.
  write("wrong_at_3000.c", R"(#include <math.h>
#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  const long cols = kevo_row_len(&in[0]);
  for (long i = 0; i < kevo_numel(&in[0]); ++i)
    y[i] = g[i] / (1.0f + expf(-g[i])) * u[i] + (cols == 3000 ? 1.0f : 0.0f);
  return KEVO_OK;
})");
  auto w = kevo({"eval", "--task", "two.json", (dir_ / "wrong_at_3000.c").string(), "--json"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  const auto wj = nlohmann::json::parse(w.out)["result"];
  EXPECT_EQ(wj["status"], "mismatch");
  EXPECT_NE(wj["detail"].get<std::string>().find("at timed shape 2 of 2 ([16, 3000])"),
            std::string::npos)
      << wj["detail"];

  // explain and the report show the per-shape figures.
  const std::string best = std::to_string(j["best"]["candidate"].get<int64_t>());
  auto x = kevo({"explain", best});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  EXPECT_NE(x.out.find("per shape   [64, 1000] x1:"), std::string::npos) << x.out;
  EXPECT_NE(x.out.find("[16, 3000] x3:"), std::string::npos) << x.out;
  auto rep = kevo({"report", std::to_string(j["run"].get<int64_t>())});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("## Per shape"), std::string::npos) << rep.out.substr(0, 3000);
  EXPECT_NE(rep.out.find("| [16, 3000] | 3 |"), std::string::npos) << rep.out.substr(0, 3000);
  // The text summary says it too.
  auto again = kevo({"run", "two.json", "--max-evals", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("per shape   [64, 1000] x1: chosen"), std::string::npos) << again.out;
}

// kill -9 in the middle of a run, then --resume: nothing that finished is
// lost or measured again, and the store is intact.
TEST_F(Cli, KilledRunResumesWithoutRepeatingWork) {
  nlohmann::json task = nlohmann::json::parse(kSearchTask);
  task["search"]["confirm"] = 0;  // every evaluation below is then a search's
  write("search.json", task.dump());
  SpawnOptions o;
  o.argv = {test::kevo_binary().string(), "run", "search.json", "--max-evals", "8"};
  o.cwd = dir_;
  o.env = {"KEVO_DB=" + db_};
  int64_t before_kill = 0;
  {
    ChildProcess child(o);
    CappedBuffer out, err;
    for (int i = 0; i < 1200 && before_kill < 3; ++i) {  // at most 2 minutes
      child.drain(out, err);
      ASSERT_FALSE(child.try_wait()) << "finished before it was killed: " << err.text();
      usleep(100 * 1000);
      Store s(db_, true);
      before_kill = scalar(s, "SELECT COUNT(*) FROM evaluations");
    }
    ASSERT_GE(before_kill, 3);
    child.kill_group();
    child.wait();
    EXPECT_EQ(child.term_signal(), SIGKILL);
  }
  auto r = kevo({"run", "--resume", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming run 1"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 8);
  Store s(db_, true);
  EXPECT_EQ(scalar(s, "SELECT COUNT(*) FROM evaluations"), 8);
  // Each candidate has at most one evaluation, and each point one candidate.
  EXPECT_EQ(scalar(s, "SELECT COUNT(*) FROM (SELECT candidate_id FROM evaluations "
                      "GROUP BY candidate_id HAVING COUNT(*) > 1)"), 0);
  EXPECT_EQ(scalar(s, "SELECT COUNT(*) - COUNT(DISTINCT source_hash || knobs_json) FROM candidates"), 0);
  auto ic = s.query("PRAGMA integrity_check");
  EXPECT_EQ(std::get<std::string>(ic.rows.at(0).at(0)), "ok");
  // What was stored before the kill is still there, unchanged in number.
  EXPECT_GE(scalar(s, "SELECT COUNT(*) FROM evaluations WHERE id <= " + std::to_string(before_kill)),
            before_kill);
  EXPECT_EQ(scalar(s, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), 1);
}

}  // namespace
}  // namespace kevo
