// The cuda target. Three parts:
//  - parsing what the CUDA tools print (ptxas -v, ncu's CSV pages, nvdisasm's
//    line table), on files recorded on an H200;
//  - the runner protocol and recovery, against fake_cuda_runner (a process
//    that speaks the protocol without a GPU) and fake_nvcc.sh: runs anywhere;
//  - the real thing on a GPU: the hostile set and every seed family. These
//    skip, saying why, where no GPU answers.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <regex>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "core/paths.h"
#include "core/process.h"
#include "core/space.h"
#include "eval/backend.h"
#include "eval/evaluator.h"
#include "support/bias_gelu.h"  // test::write_file
#include "support/scale_rowmax.h"
#include "support/test_support.h"
#include "synth/synthesizer.h"
#include "targets/cuda/cuda_target.h"
#include "targets/cuda/reports.h"
#include "targets/runner/protocol.h"

namespace kevo {
namespace {

std::string fixture(const std::string& name) {
  return read_text_file(test::source_dir() / "targets" / "cuda_data" / name);
}

#define EXPECT_STATUS(r, s) EXPECT_EQ(status_name((r).status), status_name(s)) << (r).detail

// ---- parsing ------------------------------------------------------------------------

TEST(CudaReports, PtxasResourceReport) {
  auto k = cuda::parse_ptxas(fixture("ptxas_v.txt"));
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].kernel, "_Z3rmsPK13__nv_bfloat16PS_i");
  EXPECT_EQ(k[0].registers, 16);
  EXPECT_EQ(k[0].smem_bytes, 128);
  EXPECT_EQ(k[0].barriers, 1);
  EXPECT_EQ(k[0].spill_store_bytes, 0);
  auto m = cuda::ptxas_metrics(k);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m[1].metric, "ptxas.registers");
  EXPECT_EQ(m[1].value, 16);
}

TEST(CudaReports, PtxasSpillsAndSeveralKernels) {
  const std::string log =
      "ptxas info    : Compiling entry function '_Z1aPf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1aPf\n"
      "    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 16384 bytes smem, 368 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z1bPf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1bPf\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 0 barriers, 360 bytes cmem[0]\n";
  auto k = cuda::parse_ptxas(log);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].registers, 255);
  EXPECT_EQ(k[0].spill_store_bytes, 40);
  EXPECT_EQ(k[0].spill_load_bytes, 36);
  EXPECT_EQ(k[0].smem_bytes, 16384);
  EXPECT_EQ(k[1].registers, 32);
  EXPECT_EQ(k[1].smem_bytes, 0);
  auto m = cuda::ptxas_metrics(k);
  double spills = 0;
  for (const auto& x : m)
    if (x.metric == "ptxas.spill_store_bytes") spills = x.value;
  EXPECT_EQ(spills, 40);
}

TEST(CudaReports, NcuRawPage) {
  // Recorded on an H200: ncu --csv --page raw with kevo's metric list, with
  // the profiler's own lines before the table.
  auto kernels = cuda::parse_ncu_raw(fixture("ncu_raw.csv"));
  ASSERT_EQ(kernels.size(), 1u);
  const auto& k = kernels[0];
  EXPECT_NE(k.name.find("rms"), std::string::npos);
  EXPECT_EQ(k.grid, "(16384, 1, 1)");
  EXPECT_NEAR(k.value("dram__throughput.avg.pct_of_peak_sustained_elapsed"), 34.82, 1e-9);
  EXPECT_NEAR(k.value("dram__bytes_read.sum"), 134226176, 0.5);  // "134,226,176"
  EXPECT_NEAR(k.value("gpu__time_duration.sum"), 148384, 0.5);
  EXPECT_EQ(k.units.at("gpu__time_duration.sum"), "ns");
  auto m = cuda::ncu_metrics(k);
  bool dram = false, stall = false;
  for (const auto& x : m) {
    if (x.metric == "ncu.dram_pct") dram = true;
    if (x.metric == "ncu.stall.long_scoreboard") stall = x.value > 30;
  }
  EXPECT_TRUE(dram);
  EXPECT_TRUE(stall);
  // 35% of DRAM peak, occupancy 96%, long-scoreboard stalls dominate.
  auto b = cuda::classify(k, {});
  EXPECT_EQ(b.kind, "memory-latency");
  EXPECT_NE(b.why.find("long scoreboard"), std::string::npos) << b.why;
}

// Without --print-units base, ncu scales units: seen on an H200 as a
// duration in microseconds. Values come back in nanoseconds and bytes.
TEST(CudaReports, NcuRawScaledUnits) {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\",\"l1tex__t_sector_hit_rate.pct\"\n"
      "\"\",\"\",\"usecond\",\"Mbyte\",\"%\"\n"
      "\"0\",\"k\",\"134.82\",\"268.44\",\"12.5\"\n";
  auto k = cuda::parse_ncu_raw(csv);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_NEAR(k[0].value("gpu__time_duration.sum"), 134820, 1e-6);
  EXPECT_EQ(k[0].units.at("gpu__time_duration.sum"), "ns");
  EXPECT_NEAR(k[0].value("dram__bytes_read.sum"), 268.44e6, 1e-3);
  EXPECT_NEAR(k[0].value("l1tex__t_sector_hit_rate.pct"), 12.5, 1e-12);
  // 135 us is not a launch-bound kernel.
  EXPECT_NE(cuda::classify(k[0], {}).kind, "launch");
}

// The L2 throughput and the SM clock the kernel ran at: ncu prints the
// clock scaled (cycle/usecond is MHz); it is stored in hertz and named in
// the diagnosis in MHz.
TEST(CudaReports, L2ThroughputAndTheClock) {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"sm__cycles_elapsed.avg.per_second\","
      "\"lts__throughput.avg.pct_of_peak_sustained_elapsed\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n"
      "\"\",\"\",\"usecond\",\"cycle/usecond\",\"%\",\"%\"\n"
      "\"0\",\"k\",\"182.5\",\"1,755.20\",\"71.3\",\"88.5\"\n";
  auto k = cuda::parse_ncu_raw(csv);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_NEAR(k[0].value("sm__cycles_elapsed.avg.per_second"), 1755.2e6, 1);
  EXPECT_EQ(k[0].units.at("sm__cycles_elapsed.avg.per_second"), "Hz");
  std::map<std::string, double> m;
  for (const auto& x : cuda::ncu_metrics(k[0])) m[x.metric] = x.value;
  EXPECT_NEAR(m["ncu.sm_hz"], 1755.2e6, 1);
  EXPECT_NEAR(m["ncu.l2_pct"], 71.3, 1e-9);
  auto b = cuda::classify(k[0], {});
  EXPECT_EQ(b.kind, "compute");
  EXPECT_NE(b.why.find("L2 71%, SM 88%"), std::string::npos) << b.why;
  EXPECT_NE(b.why.find("SM clock 1755 MHz"), std::string::npos) << b.why;
  // Both are asked of ncu.
  EXPECT_NE(cuda::ncu_metric_list().find("lts__throughput.avg.pct_of_peak_sustained_elapsed"), std::string::npos);
  EXPECT_NE(cuda::ncu_metric_list().find("sm__cycles_elapsed.avg.per_second"), std::string::npos);
}

// ncu's barrier stall counts every warp waiting for others at a CTA-wide,
// named or cluster barrier. A warp-specialized kernel's are mostly named
// barriers: the diagnosis must not send the reader to look for __syncthreads.
TEST(CudaReports, BarrierStallsAreNotOnlySyncthreads) {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
      "\"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio\"\n"
      "\"\",\"\",\"nsecond\",\"\",\"\"\n"
      "\"0\",\"k\",\"180000\",\"8.2\",\"1.5\"\n";
  auto k = cuda::parse_ncu_raw(csv);
  ASSERT_EQ(k.size(), 1u);
  auto b = cuda::classify(k[0], {});
  EXPECT_NE(b.why.find("top stall barrier (warps waiting for others at __syncthreads, a named or a cluster barrier)"),
            std::string::npos)
      << b.why;
}

TEST(CudaReports, NcuRawRejectsOtherText) {
  EXPECT_THROW(cuda::parse_ncu_raw("==ERROR== The application returned an error code (1).\n"),
               UserError);
}

TEST(CudaReports, ClassifyByFigures) {
  cuda::NcuKernel k;
  k.values["gpu__time_duration.sum"] = 60000;
  k.values["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 91;
  k.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 20;
  EXPECT_EQ(cuda::classify(k, {}).kind, "dram-bandwidth");
  k.values["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 10;
  k.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 85;
  EXPECT_EQ(cuda::classify(k, {}).kind, "compute");
  k.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 10;
  k.values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 20;
  EXPECT_EQ(cuda::classify(k, {}).kind, "occupancy");
  // DRAM with room, L2 near its peak: the L2 -> SM path limits it (and the
  // figures say so); a compute-bound kernel stays compute-bound.
  k.values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = 82;
  auto l2 = cuda::classify(k, {});
  EXPECT_EQ(l2.kind, "l2-bandwidth");
  EXPECT_NE(l2.why.find("L2 82%"), std::string::npos) << l2.why;
  k.values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = 69;
  EXPECT_EQ(cuda::classify(k, {}).kind, "occupancy");
  k.values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = 82;
  k.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 85;
  EXPECT_EQ(cuda::classify(k, {}).kind, "compute");
  k.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 10;
  cuda::KernelResources spilled;
  spilled.spill_store_bytes = 8;
  EXPECT_EQ(cuda::classify(k, {spilled}).kind, "spills");
  k.values["gpu__time_duration.sum"] = 3000;
  EXPECT_EQ(cuda::classify(k, {}).kind, "launch");
}

TEST(CudaReports, NcuSassPageAndHotLines) {
  auto sass = cuda::parse_ncu_sass(fixture("ncu_source_sass.csv"));
  ASSERT_EQ(sass.size(), 1u);
  ASSERT_GT(sass[0].rows.size(), 50u);
  EXPECT_NE(sass[0].rows[0].text.find("LDC"), std::string::npos);
  EXPECT_EQ(sass[0].rows[0].stall_samples, 31);
  EXPECT_EQ(sass[0].rows[0].executed, 131072);
  // Offsets are relative to the kernel's first instruction.
  const uint64_t base = sass[0].rows[0].address;
  std::map<uint64_t, int64_t> lines = {{0x0, 6}, {0x10, 6}, {0x20, 8}};
  auto hot = cuda::hot_lines(sass[0], lines);
  ASSERT_FALSE(hot.empty());
  EXPECT_EQ(hot[0].line, 6);  // 31 + 0 samples against line 8's 6
  EXPECT_EQ(sass[0].rows[1].address - base, 0x10u);
  // Per reason: the first instruction's 31 samples are 21 "no instruction",
  // 7 "not selected" and 3 "dispatch"; line 8's 6 are 4 "wait", 1 dispatch
  // and 1 issuing ("selected", which is no stall).
  EXPECT_EQ(sass[0].rows[0].stalls.at("no_inst"), 21);
  EXPECT_EQ(sass[0].rows[0].stalls.count("barrier (Not Issued)"), 0u);
  EXPECT_EQ(hot[0].reason, "no instruction");
  EXPECT_NEAR(hot[0].reason_share, 21.0 / 31, 1e-12);
  ASSERT_EQ(hot.size(), 2u);
  EXPECT_EQ(hot[1].reason, "fixed-latency wait");
  EXPECT_NEAR(hot[1].reason_share, 4.0 / 6, 1e-12);
  // The load's consumer, 13388 samples, nearly all waiting on the load.
  auto load = cuda::hot_lines(sass[0], {{0x120, 20}});
  ASSERT_EQ(load.size(), 1u);
  EXPECT_EQ(load[0].reason, "long scoreboard");
  EXPECT_GT(load[0].reason_share, 0.98);
}

TEST(CudaReports, NvdisasmLineTable) {
  const std::string text =
      "\t.text._Z3rmsPK13__nv_bfloat16PS_i:\n"
      "        //## File \"/cache/cuda/ab/abcdef.1234.cu\", line 6\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
      "        /*0010*/                   S2R R2, SR_TID.X ;\n"
      "        //## File \"/usr/local/cuda/include/cuda_bf16.hpp\", line 700 inlined at \"/cache/cuda/ab/abcdef.1234.cu\", line 8\n"
      "        /*0020*/                   LDG.E.U16 R4, desc[UR6][R2.64] ;\n"
      "        //## File \"/usr/local/cuda/include/cuda_bf16.hpp\", line 710\n"
      "        /*0030*/                   IMAD.U32 R4, R4, 0x10000, RZ ;\n";
  auto map = cuda::parse_nvdisasm_lines(text, "abcdef");
  ASSERT_EQ(map.count("_Z3rmsPK13__nv_bfloat16PS_i"), 1u);
  const auto& m = map.at("_Z3rmsPK13__nv_bfloat16PS_i");
  EXPECT_EQ(m.at(0x0), 6);
  EXPECT_EQ(m.at(0x10), 6);
  EXPECT_EQ(m.at(0x20), 8);  // header code counts at the line that called it
  EXPECT_EQ(m.count(0x30), 0u);
}

// Recorded on an H200 from the same source (rms_probe.cu): ncu's SASS page
// and nvdisasm's line table of the module. The stall samples land on the two
// loops that load x (lines 18 and 8), then the block reduction (line 13).
TEST(CudaReports, HotLinesFromRecordedProfile) {
  auto lines = cuda::parse_nvdisasm_lines(fixture("nvdisasm_g.txt"), "rms_probe");
  ASSERT_EQ(lines.count("_Z3rmsPK13__nv_bfloat16PS_i"), 1u);
  const auto& m = lines.at("_Z3rmsPK13__nv_bfloat16PS_i");
  EXPECT_EQ(m.at(0x0), 5);
  EXPECT_EQ(m.at(0x10), 8);
  auto sass = cuda::parse_ncu_sass(fixture("ncu_source_sass.csv"));
  ASSERT_EQ(sass.size(), 1u);
  auto hot = cuda::hot_lines(sass[0], m);
  ASSERT_GE(hot.size(), 3u);
  EXPECT_EQ(hot[0].line, 18);
  EXPECT_EQ(hot[1].line, 8);
  EXPECT_EQ(hot[2].line, 13);
  EXPECT_NEAR(hot[0].share, 1652.0 / 18445.0, 1e-9);
  // Each line's commonest reason, by its share of that line's samples.
  EXPECT_EQ(hot[0].reason, "fixed-latency wait");
  EXPECT_NEAR(hot[0].reason_share, 0.411, 0.001);
  EXPECT_EQ(hot[1].reason, "fixed-latency wait");
  EXPECT_NEAR(hot[1].reason_share, 0.471, 0.001);
}

// ---- protocol and recovery, without a GPU -----------------------------------------------

class FakeCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("KEVO_CUDA_RUNNER", KEVO_FAKE_CUDA_RUNNER, 1);
    setenv("KEVO_NVCC", (test::source_dir() / "targets" / "fake_nvcc.sh").c_str(), 1);
    // The fake runner's own settings, which a runner sees only when named.
    setenv("KEVO_RUNNER_ENV", "FAKE_GPUS,FAKE_PIDFILE,FAKE_LANDLOCK_FAILS,FAKE_JOBFILE", 1);
    task_ = test::quick_task("swiglu", {{"g", {8, 100}}},
                             {{"target", "cuda"}, {"limits", {{"timeout_s", 2}}}});
    target_ = make_target("cuda");
  }
  // The fake runner and nvcc are for these tests only: a later test in this
  // process (CudaRunner, OnGpu) must find the real ones.
  void TearDown() override {
    target_.reset();
    unsetenv("KEVO_CUDA_RUNNER");
    unsetenv("KEVO_NVCC");
    unsetenv("KEVO_RUNNER_ENV");
  }
  EvalResult eval(const std::string& mode) {
    std::string text = "// FAKE_MODE=" + mode +
                       "\nextern \"C\" int kevo_launch(const kevo_tensor* in, int n_in, "
                       "kevo_tensor* out, int n_out, const double* s, int ns, cudaStream_t st) "
                       "{ return 0; }\n";
    CandidateSource src{text, "fake_" + mode + ".cu", "cuda"};
    Evaluator ev(task_, *target_, roof_, refs_, compiles_);
    ev.profile_top = 0;
    return ev.evaluate(src, {});
  }
  Task task_;
  std::unique_ptr<Target> target_;
  Roof roof_ = test::fake_roof(1000, 1e6);
  ReferenceCache refs_{""};
  CompileCache compiles_{test::temp_dir("fake-cuda-cache")};
};

// A runner without nvcc cannot compile a candidate: the target says so
// (kevo targets, and every CUDA test that compiles skips with this reason).
TEST(CudaTarget, UnavailableWithoutNvccSaysWhy) {
  setenv("KEVO_CUDA_RUNNER", KEVO_FAKE_CUDA_RUNNER, 1);
  setenv("KEVO_NVCC", "/nonexistent/nvcc", 1);
  const std::string why = cuda_unavailable_reason();
  EXPECT_NE(why.find("KEVO_NVCC='/nonexistent/nvcc' does not exist"), std::string::npos) << why;
  try {
    make_target("cuda");
    ADD_FAILURE() << "made a cuda target without nvcc";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("target 'cuda' cannot be used: KEVO_NVCC="),
              std::string::npos)
        << e.what();
  }
  setenv("KEVO_NVCC", (test::source_dir() / "targets" / "fake_nvcc.sh").c_str(), 1);
  EXPECT_EQ(cuda_unavailable_reason(), "");
  unsetenv("KEVO_CUDA_RUNNER");
  unsetenv("KEVO_NVCC");
}

TEST_F(FakeCuda, RoundTrip) {
  EXPECT_EQ(target_->host_key(), "Fake GPU (cc 9.0) x1");
  // What the runner said of the device reaches the families' starts.
  EXPECT_EQ(target_->start_facts(), (std::map<std::string, int64_t>{{"SMS", 132}}));
  EvalResult r = eval("ok");
  EXPECT_STATUS(r, Status::ok);
  // The checks, the full shape, the last timed calls, the re-check after timing.
  EXPECT_EQ(r.checks.size(), task_.check_shapes.size() + 3);
  // The runner's samples reach the result as sent (the fake sends twelve
  // made-up 1 ms samples: a protocol check, not a measurement).
  ASSERT_TRUE(r.timing.has_value());
  EXPECT_EQ(r.timing->samples_s.size(), 12u);
  EXPECT_DOUBLE_EQ(r.timing->median_s, 1e-3);
  // The ptxas report of the "build" became profile figures.
  bool regs = false;
  for (const auto& m : r.profile) regs |= m.metric == "ptxas.registers" && m.value == 16;
  EXPECT_TRUE(regs);
  // So did the machine's state the runner sent with its samples.
  std::map<std::string, double> machine;
  for (const auto& m : r.profile)
    if (m.metric.rfind("machine.", 0) == 0) machine[m.metric] = m.value;
  EXPECT_EQ(machine, (std::map<std::string, double>{
                         {"machine.sm_mhz", 1980}, {"machine.gpu_temp_c", 41}, {"machine.throttle", 0}}));
}

// The runner reads candidates from one directory of its own (the fake
// refuses any other): kevo links each one in for its job and removes it
// after; the directories of this host's runs that are gone are swept, a
// live one's and another host's are left.
TEST_F(FakeCuda, EachCandidateIsPutWhereItsRunnerMayReadIt) {
  const auto root = cache_dir() / "cuda" / "runners";
  const std::string host = hostname();
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const auto stale = root / fmt::format("{}-0-0@{}", gone, host);
  const auto live = root / fmt::format("1-0-0@{}", host);  // init's: always there
  const auto elsewhere = root / fmt::format("{}-0-0@another-{}", gone, host);
  for (const auto& d : {stale, live, elsewhere}) {
    std::filesystem::create_directories(d);
    test::write_file(d / "1.so", "x");
  }
  EvalResult r = eval("ok");
  EXPECT_STATUS(r, Status::ok);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live / "1.so"));
  EXPECT_TRUE(std::filesystem::exists(elsewhere / "1.so"));
  const auto mine = root / fmt::format("{}-", getpid());
  int dirs = 0, files = 0;
  for (const auto& d : std::filesystem::directory_iterator(root))
    if (d.path().string().rfind(mine.string(), 0) == 0) {
      ++dirs;
      for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(d.path())) ++files;
    }
  EXPECT_EQ(dirs, 1);
  EXPECT_EQ(files, 0);  // the candidate was removed after its job
  // Nothing of the target's is left when it ends.
  target_.reset();
  dirs = 0;
  for (const auto& d : std::filesystem::directory_iterator(root))
    dirs += d.path().string().rfind(mine.string(), 0) == 0;
  EXPECT_EQ(dirs, 0);
  std::filesystem::remove_all(live);
  std::filesystem::remove_all(elsewhere);
}

// Where the driver does not start with the runner confined to its files,
// kevo starts it once more without, and every evaluation says so.
TEST_F(FakeCuda, ARunnerThatCannotStartConfinedIsStartedWithoutAndSaysSo) {
  setenv("FAKE_LANDLOCK_FAILS", "1", 1);
  EvalResult r = eval("ok");
  unsetenv("FAKE_LANDLOCK_FAILS");
  EXPECT_STATUS(r, Status::ok);
  EXPECT_NE(r.stderr_text.find("kevo: containment: no landlock (the driver did not start under "
                               "it: the cuda target cannot start on GPU 0: no usable CUDA "
                               "device 0: operation not permitted)"),
            std::string::npos)
      << r.stderr_text;
  // A runner that starts confined says nothing of Landlock.
  target_ = make_target("cuda");
  EvalResult confined = eval("ok");
  EXPECT_STATUS(confined, Status::ok);
  EXPECT_EQ(confined.stderr_text.find("landlock"), std::string::npos) << confined.stderr_text;
}

// Tensors of several dtypes (bf16 x and z, f32 s and y): the job carries each
// one's, the runner's outputs come back at their sizes and are compared as such.
TEST_F(FakeCuda, EachTensorTravelsInItsOwnDtype) {
  const auto dir = test::temp_dir("fake-cuda-mixed");
  test::write_file(dir / "scale_rowmax.json", test::kScaleRowmaxDefinition);
  test::write_file(dir / "scale_rowmax_ref.c", test::kScaleRowmaxReference);
  task_ = parse_task({{"operator", "scale_rowmax.json"},
                      {"shapes", {{"x", {8, 100}}}},
                      {"target", "cuda"},
                      {"limits", {{"timeout_s", 10}}}},
                     dir / "task.json");
  EXPECT_STATUS(eval("ok"), Status::ok);
  EvalResult wrong = eval("wrong");  // the fake bumps y's first element
  EXPECT_STATUS(wrong, Status::mismatch);
  ASSERT_FALSE(wrong.checks.empty());
  EXPECT_EQ(wrong.checks.back().failed_outputs, std::vector<std::string>{"y"});
}

TEST(RunnerJob, CarriesTheL2State) {
  runner::Job job;
  job.timing.l2 = "clean";
  nlohmann::json j = job.to_json();
  EXPECT_EQ(runner::Job::from_json(j).timing.l2, "clean");
  j["timing"].erase("l2");  // a job of a kevo before the key: the writing flush
  EXPECT_EQ(runner::Job::from_json(j).timing.l2, "dirty");
}

TEST(RunnerJob, CarriesEachTensorsDtype) {
  runner::Job job;
  job.dtype = DType::f32;
  job.dtypes = {DType::bf16, DType::f32, DType::f32, DType::bf16};
  job.phases.push_back({false, {{4, 10}, {10}, {4, 10}, {4}}, 1});
  nlohmann::json j = job.to_json();
  EXPECT_EQ(j["dtypes"], nlohmann::json({"bf16", "f32", "f32", "bf16"}));
  EXPECT_EQ(runner::Job::from_json(j).dtypes, job.dtypes);
  // A job without the list (an older kevo): every tensor has the one dtype.
  j.erase("dtypes");
  j["dtype"] = "f16";
  EXPECT_EQ(runner::Job::from_json(j).dtypes, std::vector<DType>(4, DType::f16));
  // Output offsets step by each output's own size, 64-byte aligned.
  size_t total = 0;
  auto offsets = runner::output_offsets(2, job.dtypes, job.phases[0].shapes, &total);
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 192}));  // y: 40 f32 = 160 -> 192
  EXPECT_EQ(total, 192u + 64u);                       // z: 4 bf16 = 8 -> 64
}

// The machine's state in a runner's timing event becomes machine.* metrics,
// and its launch cover's figures launch.* metrics: known numeric fields only,
// each with its unit.
TEST(RunnerJob, MachineStateBecomesMachineMetrics) {
  nlohmann::json event = {{"event", "timing"},
                          {"machine",
                           {{"sm_mhz", 1980},
                            {"mem_temp_c", 61.5},
                            {"throttle", 4},
                            {"load1", 0.25},
                            {"power_w", "high"},
                            {"fan", 3}}},
                          {"launch", {{"host_us", 14.5}, {"cover_us", 0}, {"outlasted", 2}, {"retaken", "x"}}}};
  std::map<std::string, std::pair<double, std::string>> got;
  for (const auto& m : runner::machine_metrics(event)) {
    EXPECT_EQ(m.source_line, 0) << m.metric;
    got[m.metric] = {m.value, m.unit};
  }
  const std::map<std::string, std::pair<double, std::string>> want = {
      {"machine.sm_mhz", {1980, "MHz"}},
      {"machine.mem_temp_c", {61.5, "C"}},
      {"machine.throttle", {4, "mask"}},
      {"machine.load1", {0.25, ""}},
      {"launch.host_us", {14.5, "us"}},
      {"launch.cover_us", {0, "us"}},
      {"launch.outlasted", {2, "samples"}}};
  EXPECT_EQ(got, want);
  event.erase("machine");
  event.erase("launch");
  EXPECT_TRUE(runner::machine_metrics(event).empty());
  // This host says its load (Linux has getloadavg).
  nlohmann::json host = runner::host_state();
  ASSERT_TRUE(host.contains("load1")) << host.dump();
  EXPECT_GE(host["load1"].get<double>(), 0);
}

// Each call's first output, as bytes, for three calls on the same inputs (the
// task's main shape and seed) in each of two runners: false with the reason
// in *why where a run did not finish.
bool outputs_on_the_same_inputs(Target& target, const Task& task, const std::filesystem::path& artifact,
                                std::vector<std::string>& outputs, std::string* why) {
  const CheckFn keep = [&](size_t, const std::vector<ConstTensorView>& out) {
    outputs.emplace_back(static_cast<const char*>(out.at(0).data), out.at(0).bytes());
    CheckReport r;
    r.label = "kept";
    r.passed = true;
    return r;
  };
  const RunPhase same{RunPhase::check, task.main, task.seed, "the same inputs"};
  for (int runner = 0; runner < 2; ++runner) {
    const RunOutcome out = target.run(task, artifact, {same, same, same}, keep, {});
    if (out.kind != RunOutcome::finished) {
      *why = out.detail;
      return false;
    }
  }
  return true;
}

// The harness of OnGpu.PartialSumsAreTheSameEveryRun, against the fake: the
// same bits six times where the candidate is steady, and where it is not,
// the calls after the first differ.
TEST_F(FakeCuda, TheSameInputsGiveTheSameBitsOrTheTestSaysNot) {
  for (const std::string mode : {"ok", "unsteady"}) {
    const std::string text = "// FAKE_MODE=" + mode +
                             "\nextern \"C\" int kevo_launch(const kevo_tensor* in, int n_in, "
                             "kevo_tensor* out, int n_out, const double* s, int ns, cudaStream_t st) "
                             "{ return 0; }\n";
    const CompiledCandidate c = compiles_.get(*target_, task_, text, "fake_" + mode + ".cu", "cuda", {});
    ASSERT_TRUE(c.ok) << c.log;
    std::vector<std::string> outputs;
    std::string why;
    ASSERT_TRUE(outputs_on_the_same_inputs(*target_, task_, c.artifact, outputs, &why)) << why;
    ASSERT_EQ(outputs.size(), 6u);
    EXPECT_FALSE(outputs[0].empty());
    int differ = 0;
    for (size_t i = 1; i < outputs.size(); ++i) differ += outputs[i] != outputs[0];
    // unsteady: phases 1 and 2 of each runner differ from phase 0
    EXPECT_EQ(differ, mode == "ok" ? 0 : 4) << mode;
  }
}

TEST_F(FakeCuda, WrongOutputsAreAMismatch) {
  EvalResult r = eval("wrong");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_STATUS(eval("ok"), Status::ok);  // the runner is still serving
}

// The outputs of the last timed call are checked: a kernel that skips work
// on inputs it has seen (every timed call repeats them) is a mismatch there.
// Samples whose call outlasted the launch cover hold idle GPU time: the
// figure stands (ok), and its diagnosis says how many and the host time; the
// launch cover's figures are kept as launch.* metrics. A kernel whose calls
// were hidden has no such words.
TEST_F(FakeCuda, SamplesTheLaunchCoverDidNotHideAreNamed) {
  EvalResult r = eval("unhidden");
  EXPECT_STATUS(r, Status::ok);
  ASSERT_TRUE(r.diagnosis.has_value());
  EXPECT_NE(r.diagnosis->why.find("9 of 12 samples' calls outlasted the launch cover (2 ms on the host"),
            std::string::npos)
      << r.diagnosis->why;
  std::map<std::string, double> launch;
  for (const auto& m : r.profile)
    if (m.metric.rfind("launch.", 0) == 0) launch[m.metric] = m.value;
  EXPECT_EQ(launch, (std::map<std::string, double>{{"launch.cover_us", 2000},
                                                   {"launch.host_us", 2000},
                                                   {"launch.outlasted", 9},
                                                   {"launch.retaken", 3}}));
  EvalResult ok = eval("ok");
  EXPECT_STATUS(ok, Status::ok);
  EXPECT_EQ(ok.diagnosis->why.find("outlasted"), std::string::npos) << ok.diagnosis->why;
}

TEST_F(FakeCuda, TheTimedCallsOutputsAreChecked) {
  EvalResult r = eval("skip_timed");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_NE(r.detail.find("the last timed calls"), std::string::npos) << r.detail;
}

// Work the end event does not wait for keeps the device busy after it: the
// time is suspect, measured again in a runner of its own, and stays suspect.
TEST_F(FakeCuda, WorkThatEscapesTheTimedStreamIsSuspect) {
  auto pids = test::temp_dir("fake-cuda-escaped") / "pids";
  setenv("FAKE_PIDFILE", pids.c_str(), 1);
  auto target = make_target("cuda");
  std::swap(target, target_);
  EvalResult r = eval("escaped");
  unsetenv("FAKE_PIDFILE");
  EXPECT_STATUS(r, Status::suspect);
  EXPECT_NE(r.detail.find("work on a stream kevo does not time"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("measured again in a fresh runner"), std::string::npos) << r.detail;
  std::ifstream in(pids);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_EQ(lines, 2) << "the second measurement was not in a fresh runner";
  // An honest kernel on the same target: one measurement, ok.
  EXPECT_STATUS(eval("ok"), Status::ok);
  // Work that runs ahead of the start event (alongside the flush): the
  // fenced samples are far slower than the others.
  EvalResult before = eval("hides_before");
  EXPECT_STATUS(before, Status::suspect);
  EXPECT_NE(before.detail.find("timed with the device otherwise idle the kernel takes 3 ms"),
            std::string::npos)
      << before.detail;
}

// The task's timing.l2 reaches the runner with every job that times.
TEST_F(FakeCuda, TheTasksL2StateReachesTheRunner) {
  auto jobs = test::temp_dir("fake-cuda-l2") / "jobs";
  setenv("FAKE_JOBFILE", jobs.c_str(), 1);
  for (const char* l2 : {"dirty", "clean"}) {
    task_ = test::quick_task("swiglu", {{"g", {8, 100}}},
                             {{"target", "cuda"}, {"limits", {{"timeout_s", 2}}}, {"timing", {{"l2", l2}}}});
    auto target = make_target("cuda");  // a fresh runner per task
    std::swap(target, target_);
    EXPECT_STATUS(eval("ok"), Status::ok);
  }
  unsetenv("FAKE_JOBFILE");
  std::ifstream in(jobs);
  std::map<std::string, int> seen;
  for (std::string mode, l2; in >> mode >> l2;)
    if (mode != "calibrate") ++seen[l2];
  EXPECT_GT(seen["dirty"], 0);
  EXPECT_GT(seen["clean"], 0);
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(FakeCuda, RecoversFromCrashStickyErrorAndHang) {
  EvalResult crash = eval("crash");
  EXPECT_STATUS(crash, Status::crash);
  EXPECT_NE(crash.detail.find("SIGABRT"), std::string::npos) << crash.detail;
  EXPECT_STATUS(eval("ok"), Status::ok);

  EvalResult sticky = eval("sticky");
  EXPECT_STATUS(sticky, Status::crash);
  EXPECT_NE(sticky.detail.find("sticky"), std::string::npos) << sticky.detail;
  EXPECT_STATUS(eval("ok"), Status::ok);

  EvalResult hang = eval("hang");
  EXPECT_STATUS(hang, Status::timeout);
  EXPECT_NE(hang.detail.find("restarted"), std::string::npos) << hang.detail;
  EXPECT_STATUS(eval("ok"), Status::ok);

  EvalResult rc = eval("kernel_error");
  EXPECT_STATUS(rc, Status::crash);
  EXPECT_NE(rc.detail.find("KEVO_ERR_RUNTIME"), std::string::npos) << rc.detail;
}

// A kernel that is slow but makes progress is timed, not killed: the time
// allowed for sampling follows the runner's estimate per call.
// A kernel is profiled once: timing it again (the confirmation rounds) does
// not run the profiler again. The fake ncu logs each start and fails.
// A fake ncu that logs each start, runs `then` (shell) and fails; the
// cuda target made with it; how many times it started.
struct FakeNcu {
  std::filesystem::path log;
  FakeNcu(const std::string& name, const std::string& then, std::unique_ptr<Target>& target) {
    const auto dir = test::temp_dir(name);
    log = dir / "ncu.log";
    test::write_file(dir / "ncu", "#!/bin/sh\necho started >> '" + log.string() + "'\n" + then + "exit 1\n");
    std::filesystem::permissions(dir / "ncu", std::filesystem::perms::owner_all);
    setenv("KEVO_NCU", (dir / "ncu").c_str(), 1);
    target = make_target("cuda");
    unsetenv("KEVO_NCU");
  }
  int starts() const {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
};

TEST_F(FakeCuda, ProfilesAKernelOnce) {
  FakeNcu ncu("fake-ncu", "", target_);
  ASSERT_TRUE(target_->can_profile());
  auto starts = [&] { return ncu.starts(); };
  CandidateSource src{"// FAKE_MODE=ok\nextern \"C\" int kevo_launch(const kevo_tensor* in, int n_in, "
                      "kevo_tensor* out, int n_out, const double* s, int ns, cudaStream_t st) "
                      "{ return 0; }\n",
                      "fake_ok.cu", "cuda"};
  Evaluator ev(task_, *target_, roof_, refs_, compiles_);
  ev.profile_top = 3;
  EvalResult first = ev.evaluate(src, {});
  EXPECT_STATUS(first, Status::ok);
  const int once = starts();
  EXPECT_GE(once, 1);
  EXPECT_NE(first.diagnosis->why.find("not profiled"), std::string::npos) << first.diagnosis->why;
  EvalResult again = ev.evaluate(src, {});
  EXPECT_STATUS(again, Status::ok);
  EXPECT_EQ(starts(), once);
}

// Profiles take at most their share of the measuring time: past it, a
// candidate among the best few is not profiled, and its diagnosis says why.
TEST_F(FakeCuda, ProfilesKeepToTheirShareOfTheTime) {
  FakeNcu ncu("fake-ncu-share", "sleep 0.3\n", target_);
  auto starts = [&] { return ncu.starts(); };
  auto kernel = [](int i) {
    return CandidateSource{fmt::format("// FAKE_MODE=ok\n// variant {}\nextern \"C\" int kevo_launch(const "
                                       "kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const "
                                       "double* s, int ns, cudaStream_t st) {{ return 0; }}\n",
                                       i),
                           "fake_ok.cu", "cuda"};
  };
  Evaluator ev(task_, *target_, roof_, refs_, compiles_);
  ev.profile_top = 3;
  ev.profile_share = 0.01;  // one 0.3 s profile is far more than 1% of a fake measurement
  EvalResult first = ev.evaluate(kernel(1), {});
  EXPECT_STATUS(first, Status::ok);
  const int once = starts();
  EXPECT_GE(once, 1);
  EvalResult second = ev.evaluate(kernel(2), {});
  EXPECT_STATUS(second, Status::ok);
  EXPECT_EQ(starts(), once);
  EXPECT_NE(second.diagnosis->why.find("not profiled: profiles had taken their share (1%)"),
            std::string::npos)
      << second.diagnosis->why;
  ev.profile_share = 1;  // no limit: the next one is profiled
  EXPECT_STATUS(ev.evaluate(kernel(3), {}), Status::ok);
  EXPECT_GT(starts(), once);
}

TEST_F(FakeCuda, SlowKernelsGetTimeToBeTimed) {
  EvalResult r = eval("slow_timing");  // timeout_s is 2, sampling takes 2.5 s
  EXPECT_STATUS(r, Status::ok);
}

TEST_F(FakeCuda, CompileErrorsAndRefusals) {
  CandidateSource bad{"FAKE_COMPILE_ERROR\nextern \"C\" int kevo_launch() { return 0; }\n", "bad.cu",
                      "cuda"};
  Evaluator ev(task_, *target_, roof_, refs_, compiles_);
  EvalResult r = ev.evaluate(bad, {});
  EXPECT_STATUS(r, Status::compile_error);
  EXPECT_NE(r.detail.find("bad.cu"), std::string::npos) << r.detail;
  CandidateSource own_stream{
      "extern \"C\" int kevo_launch() { cudaStream_t s; cudaStreamCreate(&s); return 0; }\n",
      "stream.cu", "cuda"};
  EvalResult s = ev.evaluate(own_stream, {});
  EXPECT_STATUS(s, Status::rejected);
  EXPECT_NE(s.detail.find("streams of its own"), std::string::npos) << s.detail;
  CandidateSource cpu_entry{"int kevo_kernel() { return 0; }\n", "k.cu", "cuda"};
  EXPECT_STATUS(ev.evaluate(cpu_entry, {}), Status::rejected);
}

// The runner must outlive the thread that happened to start it: the local
// backend measures on short-lived threads, one per GPU and batch.
TEST_F(FakeCuda, RunnerOutlivesTheThreadThatStartedIt) {
  auto pids = test::temp_dir("fake-cuda-pids") / "pids";
  setenv("FAKE_PIDFILE", pids.c_str(), 1);
  auto target = make_target("cuda");
  std::swap(target, target_);
  EvalResult first;
  std::thread t([&] { first = eval("ok"); });
  t.join();
  EXPECT_STATUS(first, Status::ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_STATUS(eval("ok"), Status::ok);
  unsetenv("FAKE_PIDFILE");
  std::ifstream in(pids);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_EQ(lines, 1) << "the runner was started again: it died with its first thread";
}

TEST_F(FakeCuda, SeveralGpusGiveSeveralSlots) {
  setenv("FAKE_GPUS", "2", 1);
  auto t = make_target("cuda");
  EXPECT_EQ(t->run_slots(), 2);
  EXPECT_EQ(t->host_key(), "Fake GPU (cc 9.0) x2");
  setenv("KEVO_CUDA_DEVICES", "1", 1);
  auto one = make_target("cuda");
  EXPECT_EQ(one->run_slots(), 1);
  setenv("KEVO_CUDA_DEVICES", "5", 1);
  EXPECT_THROW(make_target("cuda")->run_slots(), UserError);
  unsetenv("KEVO_CUDA_DEVICES");
  unsetenv("FAKE_GPUS");
}

// The local backend with two GPUs: one worker per device, every result back
// to its own job, and a stop that lets the running candidates finish while
// the rest are dropped.
TEST_F(FakeCuda, LocalBackendRunsACandidatePerGpu) {
  setenv("FAKE_GPUS", "2", 1);
  auto target = make_target("cuda");
  const int slots = target->run_slots();  // starts the runners, which read FAKE_GPUS
  unsetenv("FAKE_GPUS");
  ASSERT_EQ(slots, 2);
  Evaluator ev(task_, *target, roof_, refs_, compiles_);
  ev.profile_top = 0;
  auto family = [](const std::string& mode, int n) {
    Family f;
    f.name = fmt::format("{}{}", mode, n);
    f.text = "// FAKE_MODE=" + mode + fmt::format("\n// copy {}\n", n) +
             "extern \"C\" int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, "
             "int n_out, const double* s, int ns, cudaStream_t st) { return 0; }\n";
    f.origin = f.name + ".cu";
    f.language = "cuda";
    return f;
  };
  auto backend = make_local_backend(ev, 2);
  const std::vector<Family> mixed = {family("ok", 1), family("wrong", 1), family("ok", 2),
                                     family("crash", 1), family("ok", 3)};
  std::vector<EvalJob> jobs;
  for (const Family& f : mixed) jobs.push_back({&f, {}});
  std::map<size_t, std::string> got;
  evaluate_batch(
      *backend, jobs,
      [&](size_t i, EvalResult r) {
        EXPECT_TRUE(got.emplace(i, std::string(status_name(r.status))).second) << "twice: " << i;
      },
      {}, {});
  EXPECT_EQ(got, (std::map<size_t, std::string>{
                     {0, "ok"}, {1, "mismatch"}, {2, "ok"}, {3, "crash"}, {4, "ok"}}));
  EXPECT_EQ(backend->outstanding(), 0u);

  // Stopped at the first result: what was running still comes back, the
  // slow ones queued behind never run.
  const std::vector<Family> slow = {family("ok", 4),          family("ok", 5),
                                    family("slow_timing", 1), family("slow_timing", 2),
                                    family("slow_timing", 3), family("slow_timing", 4)};
  jobs.clear();
  for (const Family& f : slow) jobs.push_back({&f, {}});
  std::set<size_t> done;
  evaluate_batch(
      *backend, jobs, [&](size_t i, EvalResult) { EXPECT_TRUE(done.insert(i).second); },
      [&] { return done.empty(); }, {});
  EXPECT_GE(done.size(), 1u);
  EXPECT_LT(done.size(), slow.size());
  EXPECT_EQ(backend->outstanding(), 0u);
}

TEST_F(FakeCuda, Calibrate) {
  std::vector<std::string> lines;
  Roof roof = target_->calibrate([&](std::string_view l) { lines.emplace_back(l); }, {});
  EXPECT_EQ(roof.target, "cuda");
  ASSERT_FALSE(roof.bandwidth.empty());
  EXPECT_EQ(roof.bandwidth[0].gbps, 4000);
  ASSERT_FALSE(roof.peak.empty());
  EXPECT_EQ(roof.peak[0].kind, "bf16_tensor");
}

// ---- every CUDA source compiles (nvcc, no GPU needed) ----------------------------------

// Every seed family at its default point and at two more points of its
// space, and the hostile kernels, build with the target's own nvcc command
// and spill no registers. Skips where nvcc is not installed.
// The real runner reads its timing options before it looks for a GPU, so a
// bad one is one setup_error line on any machine.
TEST(CudaRunner, RejectsBadTimingOptions) {
  // The runner itself, with or without nvcc beside it: the options are read first.
  std::filesystem::path runner;
  try {
    runner = cuda_runner_path();
  } catch (const UserError& e) {
    GTEST_SKIP() << e.what();
  }
  auto events = [&](const std::string& env) {
    // Events go to descriptor 3.
    std::string cmd = env + " '" + runner.string() + "' 3>&1 1>/dev/null 2>/dev/null </dev/null";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    return out;
  };
  std::string flush = events("KEVO_CUDA_FLUSH=sometimes");
  EXPECT_NE(flush.find("\"setup_error\""), std::string::npos) << flush;
  EXPECT_NE(flush.find("KEVO_CUDA_FLUSH: expected fill, memset or read, got sometimes"), std::string::npos)
      << flush;
  for (const char* bad : {"-5", "12us", "1e9"}) {
    std::string cover = events(std::string("KEVO_CUDA_COVER_US=") + bad);
    EXPECT_NE(cover.find("KEVO_CUDA_COVER_US: expected auto or microseconds"), std::string::npos)
        << bad << ": " << cover;
  }
  // Good values get past the options (to the device, or its absence).
  for (const char* good : {"KEVO_CUDA_FLUSH=read KEVO_CUDA_COVER_US=auto", "KEVO_CUDA_COVER_US=300"}) {
    std::string out = events(good);
    EXPECT_EQ(out.find("KEVO_CUDA_"), std::string::npos) << good << ": " << out;
  }
}

TEST(CudaCompile, SeedFamiliesAndHostileKernels) {
  std::string why = cuda_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  auto target = make_target("cuda");
  auto root = test::repo_dir() / "targets" / "cuda" / "kernels";
  std::vector<std::filesystem::path> files;
  for (const auto& op : std::filesystem::directory_iterator(root))
    for (const auto& f : std::filesystem::directory_iterator(op.path()))
      if (f.path().extension() == ".cu") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 12u);
  Task task = test::quick_task("swiglu", {{"g", {8, 8}}}, {{"target", "cuda"}, {"dtype", "bf16"}});
  auto dir = test::temp_dir("cuda-compile");
  auto build = [&](const std::filesystem::path& src, const KnobValues& knobs, const std::string& tag) {
    CompileRequest req;
    req.task = &task;
    req.source = src;
    req.language = "cuda";
    req.knobs = knobs;
    req.output = dir / (src.stem().string() + tag + ".so");
    CompileOutcome out = target->compile(req);
    EXPECT_TRUE(out.ok) << src << " " << knobs_to_string(knobs) << ":\n" << out.log;
    for (const auto& m : target->compile_metrics(out.log)) {
      if (m.metric == "ptxas.spill_store_bytes") {
        EXPECT_EQ(m.value, 0) << src << " " << knobs_to_string(knobs);
      }
    }
  };
  std::mt19937_64 rng(7);
  for (const auto& f : files) {
    SearchSpace space = load_space({f}, {}, [](const std::filesystem::path&) { return "cuda"; });
    build(f, space.family(0).space.defaults(), "-default");
    for (int i = 0; i < 2; ++i)
      if (auto p = random_point(space, 0, rng)) build(f, p->knobs, "-" + std::to_string(i));
  }
  auto hostile = test::source_dir() / "eval" / "kernels" / "cuda" / "hostile.cu";
  for (int mode = 0; mode <= 12; ++mode) build(hostile, {{"MODE", mode}}, "-" + std::to_string(mode));
}

// The decode configs' starts: at every timed shape of every shipped decode
// config, each family's `@kevo start` lines give points without an error,
// and the ones the searches rely on are there: the gate/up MLP at M = 128
// gets tiles that cover M (NCONS 2, no split), and every GEMM gets a wgmma
// point with BN 64 and the ring that fills the shared memory.
TEST(CudaFamilies, DecodeStartsGiveTheirPointsAtEveryDecodeConfig) {
  const auto configs = test::repo_dir() / "configs" / "cuda" / "decode";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(configs))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 15u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    const Task task = load_task(file);
    const auto dir = test::repo_dir() / "targets" / "cuda" / "kernels" / std::string(task.op->name());
    std::vector<std::filesystem::path> kernels;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".cu") kernels.push_back(e.path());
    std::sort(kernels.begin(), kernels.end());
    const SearchSpace space =
        load_space(kernels, task.knob_restrictions, [](const std::filesystem::path&) { return "cuda"; });
    auto dims = dimension_values(task);
    ASSERT_EQ(dims.size(), task.timed.size());
    for (auto& d : dims) d["SMS"] = 132;  // an H100/H200's, as its runner says
    std::map<std::string, std::vector<KnobValues>> points;  // by family
    std::map<std::string, std::vector<int64_t>> rows;       // the M of each point
    for (const Family& f : space.families())
      for (const KnobStart& st : f.space.starts())
        for (const auto& d : dims) {
          std::string why;
          std::optional<KnobValues> p;
          ASSERT_NO_THROW(p = f.space.start_point(st, d, f.origin.string(), &why));
          if (p) points[f.name].push_back(*p);
          if (p) rows[f.name].push_back(d.at("DIM_A_0"));
        }
    ASSERT_TRUE(points.count("wgmma")) << "no wgmma start point";
    const int64_t m = task.main.shapes[0][0];
    auto has = [&](const std::map<std::string, int64_t>& want) {
      for (const auto& p : points["wgmma"]) {
        bool all = true;
        for (const auto& [k, v] : want) all = all && p.at(k) == v;
        if (all) return true;
      }
      return false;
    };
    if (task.op->name() == "gemm_swiglu" && !task.multi_shape()) {
      EXPECT_TRUE(has({{"NCONS", m > 64 ? 2 : 1}, {"SPLIT", 1}, {"WGM", 64}}));
      EXPECT_TRUE(has({{"NCONS", m > 64 ? 2 : 1}, {"SPLIT", 1}, {"BN", 64}, {"SK", 1}}));
    }
    if (task.op->name() == "gemm" && !task.multi_shape()) {
      EXPECT_TRUE(has({{"BN", 64}, {"NCONS", m > 64 ? 2 : 1}, {"STAGES", m > 64 ? 8 : 12}}));
      // cuBLAS's decode tile: 64 x 64, no split, above 64 rows two CTAs along M sharing B
      EXPECT_TRUE(has({{"BN", 64}, {"WGM", 64}, {"NCONS", 1}, {"CLUSTER", m > 64 ? 2 : 1}, {"SPLIT", 1},
                       {"PERSIST", 0}, {"STAGES", 12}}));
    }
    // The tokens-on-N family: every start's TN is the power of two that
    // covers M (at most 128); its first start (one column tile of 64) brings
    // its CTAs times SPLIT to the SMs and no further (no split where the CTAs
    // fill them alone), with SPLIT as large as that allows among the knob's
    // values.
    if (task.op->name() == "gemm") {
      ASSERT_TRUE(points.count("swapab")) << "no swapab start point";
      ASSERT_EQ(points["swapab"].size(), 3 * task.timed.size());
      for (size_t i = 0; i < points["swapab"].size(); ++i) {
        const KnobValues& p = points["swapab"][i];
        const int64_t mi = rows["swapab"][i];
        int64_t tn = 8;
        while (tn < mi && tn < 128) tn *= 2;
        EXPECT_EQ(p.at("TN"), tn) << "M " << mi;
        if (i >= task.timed.size()) continue;  // the first start's points
        const int64_t ctas = (mi + tn - 1) / tn * ((task.main.shapes[1][1] + 63) / 64);
        const int64_t split = p.at("SPLIT");
        EXPECT_EQ(p.at("MT"), 1);
        EXPECT_TRUE(split == 1 || ctas * split <= 132) << "M " << mi << ": " << ctas << " CTAs x SPLIT " << split;
        for (int64_t next : {2, 3, 4, 6, 8})
          if (next > split && ctas * next <= 132) ADD_FAILURE() << "M " << mi << ": SPLIT " << split << " < " << next;
      }
    }
  }
}

// A family's register budget (its last two require lines) admits the points
// at its edge that ptxas fits without spilling, and keeps out the ones just
// past it that spill: each measured with ptxas when the budget was set. Each
// point is the family's default with `set` changed. In the comments, "budget B of
// R" is the budget's registers per thread and the room the require line leaves
// them (65536 over the resident threads, counted in whole groups of 128).
using KnobSet = std::vector<std::pair<std::string, int64_t>>;
void expect_register_budget_edge(const std::string& op, const std::vector<KnobSet>& edge,
                                 const std::vector<KnobSet>& beyond) {
  // Skips the calling test (nothing follows the call in it) without nvcc.
  if (std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  auto target = make_target("cuda");
  auto src = test::repo_dir() / "targets" / "cuda" / "kernels" / op / "fused.cu";
  SearchSpace space = load_space({src}, {}, [](const std::filesystem::path&) { return "cuda"; });
  const KnobSpace& knobs = space.family(0).space;
  auto point = [&](const KnobSet& set) {
    KnobValues v = knobs.defaults();
    for (const auto& [k, x] : set) {
      EXPECT_TRUE(v.count(k)) << op << " has no knob " << k;
      v[k] = x;
    }
    return v;
  };
  Task task = test::quick_task(op, {{"x", {8, 64}}}, {{"target", "cuda"}, {"dtype", "bf16"}});
  auto dir = test::temp_dir("cuda-budget-" + op);
  int i = 0;
  for (const auto& set : edge) {
    KnobValues v = point(set);
    ASSERT_TRUE(knobs.valid(v)) << knobs_to_string(v) << ": " << knobs.violation(v).value_or("");
    CompileRequest req;
    req.task = &task;
    req.source = src;
    req.language = "cuda";
    req.knobs = v;
    req.output = dir / ("edge" + std::to_string(i++) + ".so");
    CompileOutcome out = target->compile(req);
    ASSERT_TRUE(out.ok) << knobs_to_string(v) << ":\n" << out.log;
    bool seen = false;
    for (const auto& m : target->compile_metrics(out.log))
      if (m.metric == "ptxas.spill_store_bytes") {
        seen = true;
        EXPECT_EQ(m.value, 0) << knobs_to_string(v);
      }
    EXPECT_TRUE(seen) << out.log;
  }
  for (const auto& set : beyond)
    EXPECT_FALSE(knobs.valid(point(set))) << knobs_to_string(point(set));
}

// The starts' edges build without spills: the deepest rings the decode
// starts ask for, 12 stages of 16 KB (gemm wgmma and streamk, BN 64), 8 of
// 24 KB (the MLP's wgmma, BN 64), 20 of 10 KB (gemm swapab at M = 16) and 6 of
// 32 KB with 128 accumulators a thread (swapab at M = 128), at a decode shape;
// and the persistent start gemm wgmma gives the 4096^3 config (128 x 256
// tiles with TMA stores, its staging beside the ring; and the ping-pong
// start, whose consumers take alternate tiles), as the start computes them,
// with a persistent cluster of two beside them, and cuBLAS's tile with EPIR,
// with STM, with CDIM and EPIR, and in a 2 x 2 cluster. With two consumers, each build holds the
// 168 registers a thread that the consumers' setmaxnreg counts on.
TEST(CudaCompile, TheStartsEdgesBuildWithoutSpills) {
  if (std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  auto target = make_target("cuda");
  const auto root = test::repo_dir() / "targets" / "cuda" / "kernels";
  auto dir = test::temp_dir("cuda-deep-rings");
  auto build = [&](const Task& task, const std::string& family, const KnobValues& v) {
    const std::string op(task.op->name());
    const auto src = root / op / (family + ".cu");
    SCOPED_TRACE(op + " " + family + " " + knobs_to_string(v));
    CompileRequest req;
    req.task = &task;
    req.source = src;
    req.language = "cuda";
    req.knobs = v;
    req.output = dir / (op + "-" + family + ".so");
    CompileOutcome out = target->compile(req);
    ASSERT_TRUE(out.ok) << out.log;
    bool seen = false;
    for (const auto& m : target->compile_metrics(out.log)) {
      if (m.metric == "ptxas.spill_store_bytes") {
        seen = true;
        EXPECT_EQ(m.value, 0);
      }
      // Two consumer warpgroups take registers from the producer's with
      // setmaxnreg, out of what the launch holds: 168 a thread at 384 threads
      // (kv_consumer_regs). Were ptxas to give the kernel fewer, the
      // consumers' setmaxnreg.inc would wait for ever.
      if (m.metric == "ptxas.registers" && v.count("NCONS") && v.at("NCONS") == 2) {
        EXPECT_EQ(m.value, 168) << out.log;
      }
    }
    EXPECT_TRUE(seen) << out.log;
  };
  struct Case {
    std::string op, family;
    nlohmann::json shapes;
    KnobSet set;
  };
  const std::vector<Case> cases = {
      {"gemm", "wgmma", {{"A", {64, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 64}, {"NCONS", 1}, {"SPLIT", 2}, {"STAGES", 12}}},
      // the decode start without split-K that round 22's search picked there
      {"gemm", "wgmma", {{"A", {64, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 64}, {"NCONS", 1}, {"SPLIT", 1}, {"STAGES", 12}, {"PERSIST", 1}, {"EPI", 2}}},
      // cuBLAS's decode tile at M = 128: 64 x 64 in a cluster of two along M,
      // each CTA multicasting half of every B box's k rows
      {"gemm", "wgmma", {{"A", {128, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 64}, {"NCONS", 1}, {"CLUSTER", 2}, {"STAGES", 12}}},
      {"gemm", "streamk", {{"A", {64, 4096}}, {"B", {4096, 4096}}}, {{"BN", 64}, {"STAGES", 12}}},
      {"gemm", "swapab", {{"A", {16, 4096}}, {"B", {4096, 4096}}},
       {{"TN", 16}, {"MT", 1}, {"SPLIT", 2}, {"STAGES", 20}}},
      {"gemm", "swapab", {{"A", {128, 4096}}, {"B", {4096, 4096}}},
       {{"TN", 128}, {"MT", 2}, {"SPLIT", 1}, {"STAGES", 6}}},
      {"gemm_swiglu", "wgmma", {{"A", {64, 4096}}, {"Wg", {4096, 14336}}},
       {{"BN", 64}, {"NCONS", 1}, {"SPLIT", 1}, {"STAGES", 8}}},
      {"gemm_swiglu", "wgmma", {{"A", {128, 4096}}, {"Wg", {4096, 14336}}},
       {{"BN", 64}, {"NCONS", 2}, {"SPLIT", 1}, {"SK", 1}, {"STAGES", 6}}},
      {"gemm", "wgmma", {{"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 256}, {"NCONS", 2}, {"STAGES", 3}, {"EPI", 1}, {"PERSIST", 1}, {"CLUSTER", 2}}},
      // cuBLAS's 4096^3 tile with the first box staged in the held ring stage
      {"gemm", "wgmma", {{"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 128}, {"WGM", 128}, {"NCONS", 2}, {"STAGES", 4}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1},
        {"PERSIST", 1}, {"CLUSTER", 2}}},
      // and with its boxes staged by stmatrix
      {"gemm", "wgmma", {{"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 128}, {"WGM", 128}, {"NCONS", 2}, {"STAGES", 4}, {"EPI", 2}, {"EPIB", 1}, {"STM", 1},
        {"PERSIST", 1}, {"CLUSTER", 2}}},
      // and in a cluster along N that shares A, its first box staged in the held stage
      {"gemm", "wgmma", {{"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 128}, {"WGM", 128}, {"NCONS", 2}, {"STAGES", 4}, {"EPI", 2}, {"EPIB", 1}, {"CDIM", 1},
        {"EPIR", 1}, {"PERSIST", 1}, {"CLUSTER", 2}}},
      // and in a 2 x 2 cluster that shares both operands (CLUSTER 4), tiles drawn as clusters free up
      {"gemm", "wgmma", {{"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 128}, {"WGM", 128}, {"NCONS", 2}, {"STAGES", 4}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1},
        {"PERSIST", 1}, {"CLUSTER", 4}, {"DYN", 1}}},
      // and with the SMs it leaves idle taking a band of C in clusters of two along M (TAIL 2)
      {"gemm", "wgmma", {{"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {{"BN", 128}, {"WGM", 128}, {"NCONS", 2}, {"STAGES", 4}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1},
        {"PERSIST", 1}, {"CLUSTER", 4}, {"DYN", 1}, {"TAIL", 2}}}};
  // (That point with DYN is the last persistent start, built below.)
  for (const Case& c : cases) {
    Task task = test::quick_task(c.op, c.shapes, {{"target", "cuda"}, {"dtype", "bf16"}});
    SearchSpace space =
        load_space({root / c.op / (c.family + ".cu")}, {}, [](const std::filesystem::path&) { return "cuda"; });
    KnobValues v = space.family(0).space.defaults();
    for (const auto& [k, x] : c.set) v[k] = x;
    ASSERT_TRUE(space.family(0).space.valid(v)) << c.op << " " << c.family << " " << knobs_to_string(v);
    build(task, c.family, v);
  }
  // The 4096^3 config's persistent start, computed as a search computes it.
  const Task big = load_task(test::repo_dir() / "configs" / "cuda" / "gemm-4096.json");
  const auto src = root / "gemm" / "wgmma.cu";
  SearchSpace space = load_space({src}, {}, [](const std::filesystem::path&) { return "cuda"; });
  const Family& f = space.family(0);
  auto dims = dimension_values(big);
  ASSERT_EQ(dims.size(), 1u);
  dims[0]["SMS"] = 132;
  std::vector<KnobValues> persistent;
  for (const KnobStart& st : f.space.starts()) {
    std::string why;
    std::optional<KnobValues> p = f.space.start_point(st, dims[0], f.origin.string(), &why);
    if (p && p->at("PERSIST") == 1) persistent.push_back(*p);
  }
  // The decode-shaped tiles without split-K (64 and 128 columns, two
  // consumers of 64 rows at this M, as deep a ring as fits), the
  // cooperative start (both consumers on one 128 x 256 tile), the
  // ping-pong one (each consumer on alternate 128 x 128 tiles of its own),
  // the cooperative tile in clusters of two with stream-K for the last wave,
  // with a fourth stage where half the TMA-store staging was, and cuBLAS's
  // 256 x 128 tile with four stages, one 64-column box staged at a time,
  // with its boxes staged by 4-byte stores and by stmatrix, and in a cluster
  // along N that shares A with its first box in the held stage (EPIR) and
  // its tiles after the first wave drawn as clusters free up (DYN).
  const std::vector<KnobSet> want = {
      {{"EPI", 2}, {"BN", 64}, {"WGM", 64}, {"NCONS", 2}, {"SPLIT", 1}, {"STAGES", 8}},
      {{"EPI", 2}, {"BN", 128}, {"WGM", 64}, {"NCONS", 2}, {"SPLIT", 1}, {"STAGES", 6}},
      {{"EPI", 2}, {"BN", 256}, {"PING", 0}},
      {{"EPI", 2}, {"PING", 1}, {"WGM", 128}},
      {{"SK", 1}, {"CLUSTER", 2}, {"BN", 256}},
      {{"STAGES", 4}, {"EPIB", 2}, {"BN", 256}},
      {{"STAGES", 4}, {"EPIB", 1}, {"BN", 128}, {"WGM", 128}, {"CLUSTER", 2}, {"STM", 0}},
      {{"STAGES", 4}, {"EPIB", 1}, {"BN", 128}, {"WGM", 128}, {"CLUSTER", 2}, {"STM", 1}},
      {{"STAGES", 4}, {"EPIB", 1}, {"BN", 128}, {"WGM", 128}, {"CLUSTER", 2}, {"CDIM", 1}, {"EPIR", 1},
       {"DYN", 1}}};
  ASSERT_EQ(persistent.size(), want.size()) << "want nine persistent starts for 4096^3";
  for (size_t i = 0; i < want.size(); ++i)
    for (const auto& [k, x] : want[i]) EXPECT_EQ(persistent[i].at(k), x) << "start " << i << " " << k;
  for (const KnobValues& p : persistent) build(big, "wgmma", p);
}

// kevo knobs --compile on a family whose points differ only in
// __launch_bounds__: 40 values live across a loop fit in the 64 registers of
// one 1024-thread block per SM, not in the 32 of two. The point that spills
// is listed with its ptxas figures and the exit status is 1.
TEST(CudaCompile, KnobsCompileFindsThePointThatSpills) {
  if (std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  auto dir = test::temp_dir("knobs-spill");
  test::write_file(dir / "fam" / "lb.cu", R"(// @kevo knob MINB 1 {1, 2}
#include "kevo_kernel.h"
__global__ void __launch_bounds__(1024, MINB) live40(const float* x, float* y) {
  float a[40];
#pragma unroll
  for (int j = 0; j < 40; ++j) a[j] = x[threadIdx.x + j * 1024];
  for (int r = 0; r < (int)x[0]; ++r)
#pragma unroll
    for (int j = 0; j < 40; ++j) a[j] = a[j] * a[(j + 7) % 40] + 1.0f;
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 40; ++j) s += a[j];
  y[threadIdx.x] = s;
}
extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out,
                                       int n_out, const double* s, int n_s, cudaStream_t st) {
  live40<<<1, 1024, 0, st>>>((const float*)in[0].data, (float*)out[0].data);
  return KEVO_OK;
}
)");
  test::write_file(dir / "task.json", R"({"name": "lb", "operator": "swiglu", "target": "cuda",
      "dtype": "bf16", "shapes": {"g": [64, 64]}, "kernels": ["fam/lb.cu"]})");
  auto r = test::run_kevo(dir, (dir / "kevo.db").string(),
                          {"knobs", "--task", "task.json", "--compile", "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& f = j["families"][0];
  EXPECT_EQ(f["spilled"], 1);
  EXPECT_EQ(f["failed"], 0);
  for (const auto& p : f["points"]) {
    const bool two = p["knobs"]["MINB"] == 2;
    EXPECT_EQ(p["spills"], two) << p.dump();
    EXPECT_EQ(p["figures"]["ptxas.spill_store_bytes"].get<double>() > 0, two) << p.dump();
    EXPECT_LE(p["figures"]["ptxas.registers"].get<double>(), two ? 32 : 64) << p.dump();
  }
  auto text = test::run_kevo(dir, (dir / "kevo.db").string(),
                             {"knobs", "--task", "task.json", "--compile"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("spills: MINB=2: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1 spill, 0 failed to compile"), std::string::npos) << text.out;
}

TEST(CudaCompile, RmsnormRegisterBudgetEdge) {
  // blocks of 256 threads: 6 at 40 registers (the default), 8 at 32, 4 at 64, and
  // 5 at 48 with 4-byte vectors, 8 per thread (plain loads and no fixed row length:
  // the L2 policy of HINT 4 takes two registers more, SPEC more still)
  expect_register_budget_edge(
      "rmsnorm",
      {{},
       {{"MINB", 8}},
       {{"TPR", 128}, {"ROWS", 2}, {"UNROLL", 4}, {"SPEC", 0}, {"MINB", 4}},
       {{"VEC", 4}, {"UNROLL", 8}, {"HINT", 0}, {"SPEC", 0}, {"MINB", 5}},
       // HINT 1 at 2048 threads per SM: 32 registers of 32, none spilled (a ptxas pass
       // over all 96 such points, and all 621 HINT 1-3 points within 8 registers of the
       // budget)
       {{"VEC", 8}, {"CACHE_ROW", 0}, {"HINT", 1}, {"SPEC", 0}, {"MINB", 8}}},
      // the same with 6 blocks: ptxas spills 28 bytes at 40 registers; with HINT 4,
      // 8 bytes at 48; two row groups with SPEC 1 and 8-byte vectors, 12 bytes at 40,
      // and 4-byte vectors with SPEC 1, 72 bytes at 32;
      // and with several row groups per block (budget + UNROLL), plain loads, no
      // fixed row length: 28 bytes at 32 registers, 24 at 48
      {{{"VEC", 4}, {"UNROLL", 8}, {"HINT", 0}, {"SPEC", 0}, {"MINB", 6}},
       {{"ROWS", 2}, {"HINT", 0}, {"SPEC", 0}, {"MINB", 4}},
       {{"TPR", 128}, {"ROWS", 2}, {"VEC", 4}, {"UNROLL", 8}, {"CACHE_ROW", 0}, {"HINT", 0},
        {"SPEC", 0}, {"MINB", 5}},
       {{"VEC", 4}, {"UNROLL", 8}, {"HINT", 4}, {"SPEC", 0}, {"MINB", 5}},
       {{"TPR", 128}, {"ROWS", 2}, {"VEC", 8}, {"UNROLL", 4}, {"CACHE_ROW", 0}, {"HINT", 0},
        {"SPEC", 1}, {"MINB", 6}},
       {{"VEC", 4}, {"UNROLL", 4}, {"CACHE_ROW", 0}, {"HINT", 0}, {"SPEC", 1}, {"MINB", 8}},
       // the cache hints of HINT 1-3 (budget + UNROLL + 1), where plain loads fit: 8 bytes
       // spilled at 48 registers (4-byte vectors, 8 per thread);
       {{"VEC", 4}, {"UNROLL", 8}, {"HINT", 1}, {"SPEC", 0}, {"MINB", 5}},
       // and those of HINT 2 and 3 at 2048 threads per SM (32 registers), kept out by a
       // require line of their own, since their budget is far below 32 where they spill:
       // 8 bytes with 8 blocks of 256 streaming 16-byte vectors, or 2 x 512 threads;
       // 20 to 28 bytes with 2 x 1024 threads streaming one 4-byte vector each
       {{"CACHE_ROW", 0}, {"HINT", 2}, {"SPEC", 0}, {"MINB", 8}},
       {{"TPR", 512}, {"ROWS", 2}, {"VEC", 4}, {"CACHE_ROW", 0}, {"HINT", 3}, {"SPEC", 0},
        {"WAVES", 1}, {"WLOAD", 1}, {"MINB", 2}},
       {{"TPR", 1024}, {"VEC", 4}, {"UNROLL", 1}, {"CACHE_ROW", 0}, {"HINT", 2}, {"SPEC", 0},
        {"MINB", 2}}});
}

// add_rmsnorm: budget 27 + 2 * cached words + 2 * UNROLL (+ 5 * UNROLL with HINT 3);
// ptxas figures (registers, spill bytes) measured with nvcc 13.0 for sm_90a.
TEST(CudaCompile, AddRmsnormRegisterBudgetEdge) {
  expect_register_budget_edge(
      "add_rmsnorm",
      {// the default: 2 rows of 128 threads, 4 vectors of 16 bytes per thread, L2 evict_last loads
       {},
       // 5 blocks of 256 threads at 48 registers (budget 47 of 51); 6 (40 registers)
       // fit too, but the budget, a line through all of the space, keeps them out
       {{"TPR", 256}, {"ROWS", 1}, {"UNROLL", 2}, {"HINT", 0}, {"MINB", 5}},
       // 3 blocks of 2 x 128 threads: 72 registers of 80 (budget 67 of 85)
       {{"HINT", 0}, {"MINB", 3}},
       // streaming, 5 blocks of 256 threads: 44 of 48 (budget 51 of 51)
       {{"TPR", 256}, {"ROWS", 1}, {"VEC", 8}, {"CACHE_ROW", 0}, {"HINT", 0}, {"MINB", 5}},
       // w in registers, and the next row in flight: 56 and 64 of 64 (budget 63 of 64)
       {{"TPR", 256}, {"ROWS", 1}, {"UNROLL", 2}, {"HINT", 0},
        {"WAVES", 1}, {"WLOAD", 2}, {"MINB", 4}},
       {{"TPR", 256}, {"ROWS", 1}, {"UNROLL", 2}, {"HINT", 0},
        {"WAVES", 1}, {"PIPE", 1}, {"WLOAD", 1}, {"MINB", 4}},
       // the same with the L2 evict_last policy loads: 64 of 64, no spill (a ptxas sweep
       // of the 34 HINT 4 points within 8 registers of the budget found none that spill)
       {{"TPR", 256}, {"ROWS", 1}, {"UNROLL", 2}, {"HINT", 4},
        {"WAVES", 1}, {"PIPE", 1}, {"WLOAD", 1}, {"MINB", 4}},
       // evict-first loads, streaming, 6 blocks of 256 threads: 40 of 40 (budget 42 of 42)
       {{"TPR", 256},
        {"ROWS", 1},
        {"UNROLL", 1},
        {"CACHE_ROW", 0},
        {"HINT", 3},
        {"WAVES", 1},
        {"WLOAD", 1},
        {"MINB", 6}}},
      {// 4 blocks of 2 x 128 threads: 4 bytes spilled at 64 registers (budget 67 of 64)
       {{"HINT", 0}, {"MINB", 4}},
       // the policy loads only with 16-byte vectors
       {{"VEC", 8}, {"UNROLL", 8}, {"HINT", 4}},
       // 5 blocks of 64 threads, w in registers: 16 bytes spilled at 168 (budget 171 of 170:
       // 5 two-warp blocks put 3 warps on some quarter of the SM, so not 204)
       {{"TPR", 64}, {"ROWS", 1}, {"UNROLL", 8}, {"HINT", 0},
        {"WAVES", 1}, {"WLOAD", 2}, {"MINB", 5}},
       // 2 blocks of 2 x 512 threads, streaming one 8-byte vector: 48 bytes at 32 (budget 33 of 32)
       {{"TPR", 512}, {"ROWS", 2}, {"VEC", 8}, {"UNROLL", 1}, {"CACHE_ROW", 0}, {"HINT", 0},
        {"MINB", 2}}});
}

// layernorm: budget 28 + cached words (x; w and b count four times with WLOAD 2)
// + 4 * UNROLL (+ 12 with WLOAD 1); ptxas figures as above.
TEST(CudaCompile, LayernormRegisterBudgetEdge) {
  expect_register_budget_edge(
      "layernorm",
      {// the default: 2 blocks of 128 threads, 4 vectors of 16 bytes per thread
       {},
       // 8 of them: 61 registers of 64 (budget 60 of 64)
       {{"MINB", 8}},
       // 4 blocks of 2 x 128 threads: 64 of 64 (budget 60 of 64)
       {{"ROWS", 2}, {"MINB", 4}},
       // 5 blocks of 256 threads, 2 vectors per thread: 48 of 48 (budget 44 of 51); 6 (40
       // registers) fit too, but the budget keeps them out
       {{"TPR", 256}, {"UNROLL", 2}, {"MINB", 5}},
       // streaming, w and b in shared memory, 8 blocks of 128: 48 of 64 (budget 64 of 64)
       {{"VEC", 8}, {"CACHE_ROW", 0}, {"WAVES", 1}, {"WLOAD", 1}, {"MINB", 8}},
       // shifted-sum variance, 4 blocks of 2 x 128, streaming: 54 of 64 (budget 64 of 64)
       {{"ROWS", 2},
        {"VEC", 8},
        {"CACHE_ROW", 0},
        {"VARMODE", 1},
        {"WAVES", 1},
        {"WLOAD", 1},
        {"MINB", 4}},
       // the next row in flight, 4 blocks of 256: 64 of 64 (budget 64 of 64)
       {{"TPR", 256}, {"UNROLL", 2}, {"WAVES", 1}, {"PIPE", 1}, {"WLOAD", 1}, {"MINB", 4}},
       // the same with the L2 evict_last policy loads: 64 of 64 (a ptxas sweep of the 122
       // HINT 4 points within 8 registers of the budget found none that spill)
       {{"TPR", 256}, {"UNROLL", 2}, {"HINT", 4}, {"WAVES", 1}, {"PIPE", 1}, {"WLOAD", 1},
        {"MINB", 4}},
       // w and b in registers, 3 blocks of 256: 71 of 80 (budget 84 of 85)
       {{"TPR", 256}, {"VEC", 8}, {"WAVES", 1}, {"WLOAD", 2}, {"MINB", 3}}},
      {// 2 blocks of 1024 threads streaming 4-byte vectors with the L2 prefetch hint:
       // 28 bytes spilled at 32 registers (budget 33 of 32)
       {{"TPR", 1024}, {"VEC", 4}, {"UNROLL", 1}, {"CACHE_ROW", 0}, {"HINT", 2}, {"MINB", 2}},
       // the policy loads only with 16-byte vectors
       {{"VEC", 8}, {"UNROLL", 8}, {"HINT", 4}},
       // 6 blocks of 2 x 128 threads streaming: 4 bytes at 40 (budget 44 of 42)
       {{"ROWS", 2}, {"UNROLL", 2}, {"CACHE_ROW", 0}, {"MINB", 6}},
       // 5 blocks of 2 x 64 threads, w and b in shared memory: 28 bytes at 96 (budget 104 of 102)
       {{"TPR", 64}, {"ROWS", 2}, {"UNROLL", 8}, {"WAVES", 1}, {"WLOAD", 1}, {"MINB", 5}}});
}

// kevo-cuda-runner copies from the device to the host only through its pinned
// stage (copy_to_host). On the H200 one copy into pageable memory (a check's
// outputs, its canary tail, the count of changed input words) left every
// later candidate of the process timed about 6% slower than the first
// (bench/results/2026-12-01-h200-runner-pageable-copies.md). No test can time
// that without a GPU and a timed assertion; this one keeps a new pageable
// copy out of the runner's source.
TEST(CudaRunnerSource, EveryDeviceToHostCopyGoesThroughThePinnedStage) {
  const std::string src = read_text_file(test::repo_dir() / "targets" / "cuda" / "runner_main.cpp");
  const size_t begin = src.find("cudaError_t copy_to_host(");
  ASSERT_NE(begin, std::string::npos) << "copy_to_host is gone";
  const size_t end = src.find("\n}\n", begin);
  ASSERT_NE(end, std::string::npos);
  for (const char* word : {"cudaMemcpyDeviceToHost", "cudaMemcpyDefault", "cudaMemcpy2D", "cudaMemcpy3D"}) {
    for (size_t at = src.find(word); at != std::string::npos; at = src.find(word, at + 1)) {
      const size_t line = std::count(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1;
      EXPECT_TRUE(at > begin && at < end)
          << word << " at runner_main.cpp:" << line << ", outside copy_to_host";
    }
  }
  // and the stage is pinned
  EXPECT_NE(src.find("cudaMallocHost(&g.stage"), std::string::npos);
}

// ---- on a GPU --------------------------------------------------------------------------------

class OnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    try {
      target_ = make_target("cuda");
      target_->run_slots();  // starts a runner: fails without a GPU
    } catch (const UserError& e) {
      GTEST_SKIP() << "no GPU here: " << e.what();
    }
  }
  EvalResult eval(const std::filesystem::path& path, const KnobValues& knobs, const Task& task) {
    CandidateSource src{read_text_file(path), path, "cuda"};
    Evaluator ev(task, *target_, roof_, refs_, compiles_);
    ev.profile_top = 0;
    return ev.evaluate(src, knobs);
  }
  // Each point, the family's default with `set` changed, is valid and right
  // against the reference at `shapes` (bf16).
  void expect_right(const std::string& op, const std::string& family, const std::vector<KnobSet>& points,
                    const nlohmann::json& shapes) {
    Task task = test::quick_task(op, shapes, {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 20}}}});
    auto src = test::repo_dir() / "targets" / "cuda" / "kernels" / op / (family + ".cu");
    SearchSpace space = load_space({src}, {}, [](const std::filesystem::path&) { return "cuda"; });
    const Family& fam = space.family(0);
    std::vector<EvalJob> jobs;
    for (const auto& set : points) {
      KnobValues v = fam.space.defaults();
      for (const auto& [k, x] : set) v[k] = x;
      ASSERT_TRUE(fam.space.valid(v)) << op << " " << family << " " << knobs_to_string(v) << ": "
                                      << fam.space.violation(v).value_or("");
      jobs.push_back({&fam, std::move(v)});
    }
    // Through kevo's local backend, as a search's batch: nvcc builds the
    // points side by side on every core, the runs stay one at a time (built
    // one at a time, the 60 persistent points outlasted a 10-minute device
    // session from a fresh machine's empty kernel cache).
    Evaluator ev(task, *target_, roof_, refs_, compiles_);
    ev.profile_top = 0;
    auto backend = make_local_backend(ev);
    size_t results = 0;
    evaluate_batch(
        *backend, jobs,
        [&](size_t i, EvalResult r) {
          ++results;
          EXPECT_STATUS(r, Status::ok) << " " << op << " " << family << " " << knobs_to_string(jobs[i].knobs);
        },
        [] { return true; }, nullptr);
    EXPECT_EQ(results, jobs.size());
  }
  std::unique_ptr<Target> target_;
  Roof roof_ = test::fake_roof(1e5, 1e9);  // a floor far below any real time
  ReferenceCache refs_{""};
  CompileCache compiles_{cache_dir()};
};

TEST_F(OnGpu, HostileSetIsClassified) {
  Task task = test::quick_task("swiglu", {{"g", {64, 1000}}},
                               {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 10}}}});
  auto path = test::source_dir() / "eval" / "kernels" / "cuda" / "hostile.cu";
  auto run = [&](int mode) { return eval(path, {{"MODE", mode}}, task); };
  EvalResult ok = run(0);
  EXPECT_STATUS(ok, Status::ok);
  // The samples came with the machine's state: the host's load always, the
  // GPU's clocks where the driver's NVML is there.
  std::map<std::string, double> machine;
  for (const auto& m : ok.profile)
    if (m.metric.rfind("machine.", 0) == 0) machine[m.metric] = m.value;
  EXPECT_TRUE(machine.count("machine.load1"));
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(nvml);
    EXPECT_GT(machine["machine.sm_mhz"], 0);
    EXPECT_GT(machine["machine.gpu_temp_c"], 0);
  }
  // The runner says what its samples hold: host time, flush, launch cover,
  // and how many samples' launches outlasted what the flush and cover hid.
  EXPECT_NE(ok.stderr_text.find("kevo-cuda-runner: timing: host time per call"), std::string::npos)
      << ok.stderr_text;
  EXPECT_NE(ok.stderr_text.find(" samples' calls outlasted the flush and cover (host at most "),
            std::string::npos)
      << ok.stderr_text;
  // A launch with a slow tail (every 25th call holds the host 300 us, past
  // what the warm-up's calls asked the cover to hide): its samples are taken
  // again under a cover grown to fit, and no kept sample is left unhidden.
  EvalResult tail = run(11);
  EXPECT_STATUS(tail, Status::ok);
  {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(tail.stderr_text, m,
                                  std::regex(R"(, (\d+) of (\d+) samples' calls outlasted the flush and cover )"
                                             R"(\(host at most (\d+) us\), (\d+) taken again under a longer cover)")))
        << tail.stderr_text;
    EXPECT_EQ(std::stoi(m[1]), 0) << tail.stderr_text;
    EXPECT_GE(std::stoi(m[3]), 300) << tail.stderr_text;
    EXPECT_GE(std::stoi(m[4]), 1) << tail.stderr_text;
  }
  EvalResult wild = run(1);
  EXPECT_STATUS(wild, Status::crash);
  EXPECT_NE(wild.detail.find("sticky"), std::string::npos) << wild.detail;
  EXPECT_STATUS(run(0), Status::ok);  // a fresh runner took over
  EvalResult hang = run(2);
  EXPECT_STATUS(hang, Status::timeout);
  EXPECT_STATUS(run(0), Status::ok);
  EvalResult launch = run(3);
  EXPECT_STATUS(launch, Status::crash);
  EXPECT_NE(launch.detail.find("KEVO_ERR_RUNTIME"), std::string::npos) << launch.detail;
  EvalResult early = run(4);
  EXPECT_STATUS(early, Status::mismatch);
  EvalResult stale = run(5);
  EXPECT_STATUS(stale, Status::mismatch);
  // Caught at the first inputs it had not seen: the timed calls' (their
  // outputs are checked too), else the re-check after timing.
  EXPECT_NE(stale.detail.find("right on the first inputs, but"), std::string::npos) << stale.detail;
  EvalResult writes = run(6);
  EXPECT_STATUS(writes, Status::crash);
  EXPECT_NE(writes.detail.find("input 'g'"), std::string::npos) << writes.detail;
  EvalResult past = run(7);
  EXPECT_STATUS(past, Status::crash);
  EXPECT_NE(past.detail.find("past the end"), std::string::npos) << past.detail;
  EXPECT_STATUS(run(0), Status::ok);
  EvalResult skips = run(9);
  EXPECT_STATUS(skips, Status::mismatch);
  EXPECT_NE(skips.detail.find("the last timed calls"), std::string::npos) << skips.detail;
  // Work that escapes the timed stream, on a shape where it is worth more
  // than a synchronize's noise: suspect, in both measurements; the honest
  // kernel on the same shape is ok.
  Task big = test::quick_task("swiglu", {{"g", {8192, 8192}}},
                              {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 20}}}});
  EvalResult escaped = eval(path, {{"MODE", 8}}, big);
  EXPECT_STATUS(escaped, Status::suspect);
  EXPECT_NE(escaped.detail.find("a stream kevo does not time"), std::string::npos)
      << escaped.detail;
  EXPECT_NE(escaped.detail.find("measured again in a fresh runner"), std::string::npos)
      << escaped.detail;
  // The same on a blocking stream of its own: the end event, on kevo's
  // stream, does not wait for it either, and the same check catches it.
  EvalResult blocking = eval(path, {{"MODE", 12}}, big);
  EXPECT_STATUS(blocking, Status::suspect);
  EXPECT_NE(blocking.detail.find("a stream kevo does not time"), std::string::npos)
      << blocking.detail;
  EvalResult honest = eval(path, {{"MODE", 0}}, big);
  EXPECT_STATUS(honest, Status::ok);
  // For the record (the allowance's margin): what the runners said.
  for (const EvalResult* r : {&escaped, &blocking, &honest}) {
    const std::string& e = r->stderr_text;
    const size_t at = e.find("device busy after the end event");
    if (at != std::string::npos) std::cout << e.substr(at, e.find('\n', at) - at) << "\n";
  }
}

// The runner is confined to its files before the driver starts, so the
// candidate's code is refused the user's files on every thread: its own and
// the driver's (a host function on the stream).
TEST_F(OnGpu, TheFileSystemIsOutOfReach) {
  std::string landlock;
  for (const auto& l : target_->containment())
    if (l.name == "landlock" && !l.on) landlock = l.detail;
  if (!landlock.empty()) GTEST_SKIP() << "no Landlock for the cuda runner here: " << landlock;
  const std::filesystem::path secret = "/tmp/kevo_hostile_secret.txt";
  const std::filesystem::path created = "/tmp/kevo_hostile_created.txt";
  test::write_file(secret, "the-user-s-secret-51c4\n");
  std::filesystem::remove(created);
  Task task = test::quick_task("swiglu", {{"g", {64, 1000}}},
                               {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 10}}}});
  EvalResult r = eval(test::source_dir() / "eval" / "kernels" / "cuda" / "hostile.cu",
                      {{"MODE", 10}}, task);
  std::filesystem::remove(secret);
  EXPECT_STATUS(r, Status::ok);
  EXPECT_FALSE(std::filesystem::exists(created)) << r.stderr_text;
  std::filesystem::remove(created);
  EXPECT_EQ(r.stderr_text.find("the-user-s-secret-51c4"), std::string::npos) << r.stderr_text;
  for (const char* who : {"candidate's", "driver's"})
    for (const char* file : {"secret", "created"}) {
      const std::string said =
          fmt::format("hostile: from the {} thread, cannot open /tmp/kevo_hostile_{}.txt: "
                      "Permission denied",
                      who, file);
      EXPECT_NE(r.stderr_text.find(said), std::string::npos) << said << "\n" << r.stderr_text;
    }
  // The evaluation's stderr would name Landlock if the runner had gone without.
  EXPECT_EQ(r.stderr_text.find("no landlock"), std::string::npos) << r.stderr_text;
}

// Every seed family's default point on small ragged shapes and a medium one.
TEST_F(OnGpu, SeedFamiliesAreRight) {
  const std::map<std::string, nlohmann::json> shapes = {
      {"scaled_softmax", {{"x", {4, 33, 1000}}}}, {"rmsnorm", {{"x", {300, 4096}}}},
      {"layernorm", {{"x", {300, 4096}}}},        {"add_rmsnorm", {{"x", {300, 4096}}}},
      {"swiglu", {{"g", {300, 4104}}}},           {"gemm", {{"A", {256, 512}}, {"B", {512, 384}}}},
      {"gemm_swiglu", {{"A", {33, 512}}, {"Wg", {512, 136}}}}};  // K, N % 8 == 0: the mma fast path
  auto root = test::repo_dir() / "targets" / "cuda" / "kernels";
  int families = 0;
  for (const auto& [op, s] : shapes) {
    nlohmann::json o = {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 20}}}};
    if (op == "scaled_softmax") o["params"] = {{"scale", 0.125}};
    Task task = test::quick_task(op, s, o);
    for (const auto& f : std::filesystem::directory_iterator(root / op)) {
      if (f.path().extension() != ".cu") continue;
      ++families;
      EvalResult r = eval(f.path(), {}, task);
      EXPECT_STATUS(r, Status::ok) << " family " << f.path();
    }
  }
  EXPECT_GE(families, 12);
}

// The task's timing.l2 picks the runner's flush: fill (dirty) or read (clean),
// as the timing line each evaluation keeps in its stderr says.
TEST_F(OnGpu, TheTasksL2StatePicksTheFlush) {
  if (std::getenv("KEVO_CUDA_FLUSH")) GTEST_SKIP() << "KEVO_CUDA_FLUSH overrides the task's timing.l2";
  auto kernel = test::repo_dir() / "targets" / "cuda" / "kernels" / "swiglu" / "stream.cu";
  const std::vector<std::pair<std::string, std::string>> cases = {{"dirty", "L2 flush (fill)"},
                                                                   {"clean", "L2 flush (read)"}};
  for (const auto& [l2, flush] : cases) {
    Task task = test::quick_task("swiglu", {{"g", {64, 1000}}},
                                 {{"target", "cuda"}, {"dtype", "bf16"}, {"timing", {{"l2", l2}}},
                                  {"limits", {{"timeout_s", 10}}}});
    EvalResult r = eval(kernel, {}, task);
    EXPECT_STATUS(r, Status::ok) << " l2 " << l2;
    EXPECT_NE(r.stderr_text.find(flush), std::string::npos) << " l2 " << l2 << ": " << r.stderr_text;
  }
}

// Split-K over a cluster (the SPLIT knob of the mma and wgmma families of gemm
// and gemm_swiglu) and stream-K (gemm streamk, gemm_swiglu wgmma SK 1): right against the reference at
// shapes where the k tiles do not divide evenly among the blocks (K = 1000: 32
// tiles of 32 or 16 of 64, over 3 or 8 blocks), the last C tile is partial
// (N = 392) and M is not a multiple of the tile (33), for small and larger
// tiles; SPLIT 1 alongside as the control.
TEST_F(OnGpu, SplitKIsRight) {
  const std::map<std::string, nlohmann::json> shapes = {
      {"gemm", {{"A", {33, 1000}}, {"B", {1000, 392}}}},
      {"gemm_swiglu", {{"A", {33, 1000}}, {"Wg", {1000, 392}}}}};
  auto check = [&](const std::string& op, const std::string& family, const std::vector<KnobSet>& points,
                   const nlohmann::json& at = nullptr) {
    expect_right(op, family, points, at.is_null() ? shapes.at(op) : at);
  };
  const std::vector<KnobSet> mma = {{{"SPLIT", 1}, {"BM", 16}, {"WM", 16}},
                                    {{"SPLIT", 3}, {"BM", 16}, {"WM", 16}},
                                    {{"SPLIT", 8}, {"BM", 16}, {"WM", 16}, {"BK", 32}},
                                    {{"SPLIT", 3}, {"BM", 64}, {"WM", 16}, {"BK", 64}}};
  check("gemm", "mma", mma);
  check("gemm_swiglu", "mma", mma);
  // The wgmma families: 1/SPLIT of 16 k tiles each (2 at SPLIT 8), with and
  // without the evict-first hint, one and two consumers, 33 of 64 or 128 rows
  // valid.
  check("gemm", "wgmma",
        {{{"SPLIT", 1}, {"BHINT", 1}},
         {{"SPLIT", 3}, {"NCONS", 1}, {"BHINT", 1}},
         {{"SPLIT", 8}, {"NCONS", 1}, {"BN", 64}},
         {{"SPLIT", 2}, {"NCONS", 2}, {"BN", 256}, {"EPI", 0}},
         // the decode starts' deep rings: 12 stages of 16 KB, 8 of 24 KB
         {{"SPLIT", 2}, {"NCONS", 1}, {"BN", 64}, {"STAGES", 12}},
         {{"SPLIT", 2}, {"NCONS", 2}, {"BN", 64}, {"STAGES", 8}}});
  check("gemm_swiglu", "wgmma",
        {{{"SPLIT", 1}, {"BHINT", 0}},
         {{"SPLIT", 1}, {"NCONS", 2}, {"WGM", 128}, {"BN", 64}},
         {{"SPLIT", 3}, {"BHINT", 1}},
         {{"SPLIT", 8}, {"BN", 64}, {"WGM", 128}},
         {{"SPLIT", 1}, {"NCONS", 1}, {"BN", 64}, {"STAGES", 8}},
         {{"SPLIT", 1}, {"NCONS", 2}, {"BN", 64}, {"STAGES", 6}}});
  // The fused MLP's stream-K grid (gemm_swiglu wgmma SK 1): at 33 x 1000 x 392
  // a CTA per k tile, each of the 7 or 4 tiles summed over 16 CTAs (g and u
  // both); at 100 x 2000 x 1032 (2 x 17 tiles of 64 x 64 or 9 of 128 x 128)
  // uneven shares over the persistent grid, partial last row and column.
  const std::vector<KnobSet> swiglu_sk = {{{"SPLIT", 1}, {"SK", 1}},
                                          {{"SPLIT", 1}, {"SK", 1}, {"NCONS", 2}, {"BN", 64}, {"STAGES", 6}},
                                          {{"SPLIT", 1}, {"SK", 1}, {"WGM", 128}, {"BN", 64}, {"KEEP", 0}},
                                          {{"SPLIT", 1}, {"SK", 1}, {"BN", 64}, {"BHINT", 0}, {"STAGES", 8}}};
  check("gemm_swiglu", "wgmma", swiglu_sk);
  check("gemm_swiglu", "wgmma", swiglu_sk, {{"A", {100, 2000}}, {"Wg", {2000, 1032}}});
  // Stream-K (gemm streamk): at 33 x 1000 x 392 every block holds one k tile,
  // so each of the 4 tiles is summed over 16 blocks; at 100 x 2000 x 1032 the
  // 18 tiles' 576 k tiles fall unevenly over the persistent grid (4-5 per
  // block on 132 SMs), with a partial last tile row and column.
  const std::vector<KnobSet> streamk = {{},
                                        {{"NCONS", 2}},
                                        {{"WGM", 128}, {"BN", 64}},
                                        {{"OCC", 2}, {"BN", 64}, {"STAGES", 6}},
                                        {{"KEEP", 0}, {"BHINT", 0}, {"BN", 256}},
                                        {{"BN", 64}, {"STAGES", 12}}};
  check("gemm", "streamk", streamk);
  check("gemm", "streamk", streamk, {{"A", {100, 2000}}, {"B", {2000, 1032}}});
  // Tokens on the MMA's N side (gemm swapab): 33 rows over 16-token tiles
  // (the last holds one), 5 rows in one 8-token tile, 200 rows over two
  // 128-token tiles with 128 accumulators a thread; split-K of 16 k tiles
  // over 3 and 8 CTAs; the ring deeper than the k tiles; and the fallback
  // (K and N not multiples of 8).
  const std::vector<KnobSet> swapab = {{},
                                       {{"SPLIT", 3}, {"MT", 1}, {"NCONS", 2}},
                                       {{"SPLIT", 8}, {"MT", 4}, {"STAGES", 4}, {"BHINT", 0}, {"KEEP", 0}},
                                       {{"SPLIT", 2}, {"MT", 1}, {"STAGES", 20}}};
  check("gemm", "swapab", swapab);
  check("gemm", "swapab", {{{"TN", 8}}, {{"TN", 8}, {"SPLIT", 4}, {"MT", 1}}}, {{"A", {5, 1000}}, {"B", {1000, 392}}});
  check("gemm", "swapab",
        {{{"TN", 128}, {"MT", 2}, {"STAGES", 6}}, {{"TN", 64}, {"NCONS", 2}, {"SPLIT", 2}, {"STAGES", 4}}},
        {{"A", {200, 2000}}, {"B", {2000, 1032}}});
  check("gemm", "swapab", {{}}, {{"A", {7, 129}}, {"B", {129, 1003}}});
}

}  // namespace
// Persistent tiles (gemm wgmma PERSIST 1) and TMA stores (EPI 2): right
// against the reference where each CTA takes several tiles in turn (at
// 2000 x 520 x 2056, 528 tiles of 128 x 64 or 144 of 128 x 256 over at most one
// CTA per SM), with the last tile row and column partial and K not a multiple
// of the k tile; one and two consumers, 128-row consumers, clusters of two and four,
// KEEP 0 and 1, each epilogue, and ping-pong consumers (PING 1: alternate
// tiles, the ring shared in tile order). Then EPI 2 without persistence at the
// split-K test's ragged 33 x 1000 x 392, and PERSIST where the tiles are fewer
// than the SMs.
TEST_F(OnGpu, PersistentTilesAreRight) {
  const nlohmann::json many = {{"A", {2000, 520}}, {"B", {520, 2056}}};
  expect_right("gemm", "wgmma",
               {{{"PERSIST", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}},  // the 4096^3 start
                {{"PERSIST", 1}, {"EPI", 2}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 6}},
                {{"PERSIST", 1}, {"EPI", 0}, {"BN", 64}, {"KEEP", 0}},
                {{"PERSIST", 1}, {"EPI", 1}, {"BN", 128}, {"WGM", 128}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"EPI", 2}, {"BN", 128}, {"CLUSTER", 2}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"EPI", 1}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 3}, {"GROUP_M", 1}},
                // ping-pong: the consumers take alternate tiles of their own
                {{"PERSIST", 1}, {"PING", 1}, {"EPI", 2}, {"BN", 128}, {"WGM", 128}, {"STAGES", 5}},
                {{"PERSIST", 1}, {"PING", 1}, {"EPI", 1}, {"BN", 128}, {"STAGES", 4}, {"KEEP", 0}},
                {{"PERSIST", 1}, {"PING", 1}, {"EPI", 0}, {"BN", 64}, {"STAGES", 2}},
                {{"PERSIST", 1}, {"PING", 1}, {"EPI", 2}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 4}},
                // stream-K for the last wave: 144 tiles of 128 x 256 (72 of
                // clusters of two) over the SMs, 9 k tiles each
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 0}, {"BN", 128}, {"WGM", 128}, {"KEEP", 0}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 1}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 3}, {"GROUP_M", 1}},
                // TMA stores staged a few boxes at a time, a deeper ring in the room
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 2}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"BN", 192}, {"STAGES", 4}, {"SK", 1}},
                {{"PERSIST", 1}, {"PING", 1}, {"EPI", 2}, {"EPIB", 1}, {"BN", 128}, {"WGM", 128}, {"STAGES", 5}},
                // cuBLAS's 4096^3 shape: 256 x 128 tiles, 4 stages, one box staged at a time
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"BN", 128}, {"WGM", 128}, {"CLUSTER", 2}, {"STAGES", 4}},
                // the first box staged in the last k tile's ring stage (EPIR)
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"BN", 128}, {"WGM", 128}, {"CLUSTER", 2},
                 {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"BN", 256}, {"KEEP", 0}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"BN", 128}, {"NCONS", 1}, {"STAGES", 2}},
                // the boxes staged with stmatrix (STM)
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"STM", 1}, {"BN", 128}, {"WGM", 128}, {"CLUSTER", 2},
                 {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"STM", 1}, {"BN", 128}, {"WGM", 128},
                 {"CLUSTER", 2}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 2}, {"STM", 1}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"STM", 1}, {"BN", 192}, {"NCONS", 1}, {"STAGES", 3}},
                // clusters along N that share A's rows (CDIM): 2056 columns are 17 tiles
                // of 128 (the last cluster's second CTA past N) and 11 of 192
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"WGM", 128},
                 {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128},
                 {"WGM", 128}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"NCONS", 1}, {"STAGES", 4},
                 {"BHINT", 1}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"STAGES", 3}},
                {{"EPI", 1}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"EPI", 0}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"WGM", 128}, {"KEEP", 0},
                 {"STAGES", 3}},
                // tiles past the first wave drawn as clusters free up (DYN)
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 2}, {"CDIM", 1},
                 {"BN", 128}, {"WGM", 128}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 0}, {"CLUSTER", 2}, {"BN", 128}, {"KEEP", 0}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 1}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 6}},
                // stream-K for the last wave only, after the whole tiles (SK 2),
                // and stream-K with the first box staged in the held stage (EPIR)
                {{"PERSIST", 1}, {"SK", 2}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 2}, {"CDIM", 1},
                 {"BN", 128}, {"WGM", 128}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"SK", 2}, {"EPI", 0}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 6}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"BN", 128}, {"STAGES", 3}},
                // 2 x 2 clusters sharing A along the tile row and B along the column
                // (CLUSTER 4): 8 tile rows of 256 in 4 cluster rows, 17 tile columns of
                // 128 in 9 (the last cluster's second column past N); 16 rows of 128
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 4}, {"BN", 128},
                 {"WGM", 128}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"CLUSTER", 4}, {"BN", 128}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 4}, {"BN", 128},
                 {"WGM", 128}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"SK", 2}, {"EPI", 0}, {"CLUSTER", 4}, {"BN", 256}, {"STAGES", 3}},
                {{"EPI", 1}, {"CLUSTER", 4}, {"BN", 128}, {"NCONS", 1}, {"STAGES", 4}},
                // B boxes that do not halve across the column: each CTA loads half of
                // every box's k rows (K = 520: the last k tile's rows partly past K)
                {{"EPI", 0}, {"CLUSTER", 2}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 12}, {"GROUP_M", 1}},
                {{"PERSIST", 1}, {"EPI", 2}, {"CLUSTER", 2}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 6}},
                {{"EPI", 2}, {"CLUSTER", 2}, {"BN", 192}, {"NCONS", 1}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"EPI", 2}, {"CLUSTER", 4}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 6}}},
               many);
  expect_right("gemm", "wgmma",
               {{{"EPI", 2}},
                {{"EPI", 2}, {"NCONS", 1}, {"BN", 192}},
                {{"EPI", 2}, {"CLUSTER", 2}},
                {{"PERSIST", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"PING", 1}, {"EPI", 2}, {"BN", 64}, {"STAGES", 3}},
                // fewer tiles than SMs: a CTA per k tile, up to 15 partials added to a tile
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 128}, {"CLUSTER", 2}, {"STAGES", 4}},
                {{"PERSIST", 1}, {"SK", 1}, {"EPI", 0}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 6}},
                {{"EPI", 2}, {"EPIB", 1}, {"BN", 256}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"BN", 128}, {"CLUSTER", 2}, {"STAGES", 3}},
                {{"EPI", 2}, {"STM", 1}, {"BN", 192}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"STM", 1}, {"BN", 128}, {"STAGES", 3}},
                // one tile row; 392 columns: 4 tiles of 128 in 2 clusters along N, the last one ragged
                {{"PERSIST", 1}, {"EPI", 2}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"STAGES", 3}},
                {{"EPI", 2}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 4}},
                // fewer tiles than SMs: every cluster draws past the end at once
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"STAGES", 3}},
                {{"PERSIST", 1}, {"SK", 2}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 2}, {"CDIM", 1},
                 {"BN", 128}, {"WGM", 128}, {"STAGES", 4}},
                // one tile row in 2 x 2 clusters: every cluster's second row past M
                {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 4}, {"BN", 128},
                 {"WGM", 128}, {"STAGES", 4}},
                {{"EPI", 2}, {"CLUSTER", 4}, {"BN", 128}, {"NCONS", 1}, {"STAGES", 4}},
                // cuBLAS's decode tile: the cluster's second CTA past M still loads its half of B
                {{"EPI", 0}, {"CLUSTER", 2}, {"BN", 64}, {"NCONS", 1}, {"STAGES", 12}, {"GROUP_M", 1}}},
               {{"A", {33, 1000}}, {"B", {1000, 392}}});
}

// TAIL: on a GPU of 132 SMs (H100, H200) 2 x 2 clusters leave 12 idle,
// which take a band of C in a second launch beside the first. At
// 2000 x 264 x 4040 in 256 x 128 tiles (8 x 32, both ragged) the band is
// the last 200 columns (2 tile columns on 12 SMs beside 30 on 120), at
// 2700 x 264 x 3000 in 128 x 256 tiles (22 x 12) the last 140 rows; on
// other GPUs the choice differs and the output must be right all the same.
TEST_F(OnGpu, TailBandIsRight) {
  expect_right("gemm", "wgmma",
               {{{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 4}, {"BN", 128},
                 {"WGM", 128}, {"STAGES", 4}, {"TAIL", 2}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 1}, {"CLUSTER", 4}, {"BN", 128}, {"WGM", 128}, {"STAGES", 4},
                 {"TAIL", 1}}},
               {{"A", {2000, 264}}, {"B", {264, 4040}}});
  expect_right("gemm", "wgmma",
               {{{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"CLUSTER", 4}, {"BN", 256}, {"STAGES", 3}, {"TAIL", 2}},
                {{"PERSIST", 1}, {"EPI", 2}, {"EPIB", 2}, {"CLUSTER", 4}, {"BN", 256}, {"STAGES", 4}, {"TAIL", 1}}},
               {{"A", {2700, 264}}, {"B", {264, 3000}}});
}

// TailBandIsRight checks outputs only, and it passed while no band was ever
// launched (round 19: the launcher saw no idle SMs and ran one launch). Here
// the band writes nothing (KEVO_DIAG_TAIL_SKIP): the check must fail, which it
// does only if the band launch took its share of C.
TEST_F(OnGpu, TailBandIsLaunched) {
  const auto family = test::repo_dir() / "targets" / "cuda" / "kernels" / "gemm" / "wgmma.cu";
  const auto skip = test::temp_dir("tail-skip") / "wgmma.cu";
  const std::string text = "#define KEVO_DIAG_TAIL_SKIP 1\n" + read_text_file(family);
  write_file_atomic(skip, text.data(), text.size());
  SearchSpace space = load_space({family}, {}, [](const std::filesystem::path&) { return "cuda"; });
  Task task = test::quick_task("gemm", {{"A", {2000, 264}}, {"B", {264, 4040}}},
                               {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 20}}}});
  for (int tail : {1, 2}) {
    KnobValues v = space.family(0).space.defaults();
    for (const auto& [k, x] : KnobSet{{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1},
                                      {"CLUSTER", 4}, {"BN", 128}, {"WGM", 128}, {"STAGES", 4}, {"TAIL", tail}})
      v[k] = x;
    ASSERT_TRUE(space.family(0).space.valid(v)) << knobs_to_string(v);
    EvalResult r = eval(skip, v, task);
    EXPECT_STATUS(r, Status::mismatch) << " TAIL " << tail << ": the band's tiles were written without the band";
  }
}

// Where a family sums partials in an order of its own (split-K over a
// cluster, a stream-K workspace), it says the sum is the same in every run on
// a GPU: so its output must be the same to the bit for the same inputs, call
// after call in one runner (the stream-K flags carry over from launch to
// launch) and in a fresh runner. So must a family whose tile schedule keeps
// state in global memory from launch to launch (DYN's counter).
TEST_F(OnGpu, PartialSumsAreTheSameEveryRun) {
  struct Point {
    std::string op, family;
    KnobSet set;
    nlohmann::json shapes;
  };
  const nlohmann::json small = {{"A", {33, 1000}}, {"B", {1000, 392}}};
  const nlohmann::json small_mlp = {{"A", {33, 1000}}, {"Wg", {1000, 392}}};
  const nlohmann::json many = {{"A", {2000, 520}}, {"B", {520, 2056}}};
  const std::vector<Point> points = {
      {"gemm", "wgmma", {{"SPLIT", 3}, {"NCONS", 1}}, small},
      {"gemm", "wgmma", {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}}, small},
      {"gemm", "wgmma", {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 256}, {"STAGES", 3}}, many},
      {"gemm", "wgmma", {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"BN", 256}, {"CLUSTER", 2}, {"STAGES", 3}}, many},
      {"gemm", "wgmma", {{"PERSIST", 1}, {"SK", 2}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"WGM", 128}, {"STAGES", 4}}, many},
      // DYN's tile counter carries over from launch to launch too (set back
      // to 0 by the last cluster to draw past the end)
      {"gemm", "wgmma", {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"CLUSTER", 2}, {"CDIM", 1}, {"BN", 128}, {"STAGES", 3}}, many},
      {"gemm", "wgmma", {{"PERSIST", 1}, {"DYN", 1}, {"EPI", 2}, {"EPIB", 1}, {"EPIR", 1}, {"CLUSTER", 4}, {"BN", 128}, {"WGM", 128}, {"STAGES", 4}}, many},
      {"gemm", "wgmma", {{"PERSIST", 1}, {"SK", 1}, {"EPI", 2}, {"CLUSTER", 4}, {"BN", 128}, {"STAGES", 3}}, many},
      {"gemm", "streamk", {}, small},
      {"gemm", "swapab", {{"SPLIT", 3}, {"MT", 1}}, small},
      {"gemm_swiglu", "wgmma", {{"SPLIT", 3}}, small_mlp},
      {"gemm_swiglu", "wgmma", {{"SPLIT", 1}, {"SK", 1}, {"BN", 64}}, small_mlp}};
  for (const Point& p : points) {
    Task task = test::quick_task(p.op, p.shapes, {{"target", "cuda"}, {"dtype", "bf16"}, {"limits", {{"timeout_s", 20}}}});
    const auto src = test::repo_dir() / "targets" / "cuda" / "kernels" / p.op / (p.family + ".cu");
    const SearchSpace space = load_space({src}, {}, [](const std::filesystem::path&) { return "cuda"; });
    KnobValues v = space.family(0).space.defaults();
    for (const auto& [k, x] : p.set) v[k] = x;
    const std::string what = p.op + " " + p.family + " " + knobs_to_string(v) + " at " + p.shapes.dump();
    ASSERT_TRUE(space.family(0).space.valid(v)) << what;
    const CompiledCandidate c = compiles_.get(*target_, task, read_text_file(src), src, "cuda", v);
    ASSERT_TRUE(c.ok) << what << "\n" << c.log;
    std::vector<std::string> outputs;
    std::string why;
    ASSERT_TRUE(outputs_on_the_same_inputs(*target_, task, c.artifact, outputs, &why)) << what << ": " << why;
    ASSERT_EQ(outputs.size(), 6u) << what;
    for (size_t i = 1; i < outputs.size(); ++i)
      EXPECT_TRUE(outputs[i] == outputs[0]) << what << ": call " << i << " of 6 differs from the first";
  }
}

}  // namespace kevo
