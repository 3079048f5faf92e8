// A stand-in for kevo-cuda-runner on machines without a GPU: it speaks the
// same protocol (ready, check, timing, done, cuda_error, ...) so the cuda
// target's process handling is tested everywhere. What it does is read from
// the "artifact", a text file that fake_nvcc.sh copied from the candidate's
// source: a line `FAKE_MODE=<mode>` with mode one of
//   ok        computes the right outputs (kevo's own reference) and times 1 ms
//   wrong     right outputs plus 1 in the first element
//   crash     aborts during the first check
//   hang      sleeps during the first check
//   sticky    reports a sticky CUDA error and exits, as the real runner does
//   kernel_error  reports the kernel's return code 3
//   slow_timing   times as `ok`, but its calls take 1 s each (it sleeps 2.5 s
//                 between announcing the timing and reporting it)
//   escaped   as `ok`, but the device stays busy 0.5 ms after each sample's
//             end event (work on a stream the runner does not time)
//   skip_timed  as `ok`, but the last timed call's outputs are wrong
//   hides_before  as `ok`, but its fenced samples (the device idle before the
//             start event) take 3 ms: work ran before the samples' start event
//   unhidden  as `ok`, but 9 of its 12 samples' calls outlasted the launch
//             cover (2 ms of host time a call, the cover at its 2 ms cap)
//   unsteady  as `ok`, but phase k's first output element is k more: the
//             same inputs do not give the same bits from call to call
// Started with --files DIR --output FILE, as kevo starts the real one, it
// reads only candidates in DIR and writes only FILE (a load_error or
// setup_error otherwise); with FAKE_LANDLOCK_FAILS=1 in its environment it
// fails at start so, as a driver that cannot start confined would. Each job
// begins with the containment note: Landlock off where started with
// --no-landlock WHY.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/defined_operator.h"
#include "core/operator.h"
#include "targets/runner/protocol.h"
#include "targets/runner/sandbox.h"

using namespace kevo;

namespace {

void emit(const nlohmann::json& e) { runner::emit_event(3, e); }

std::string read_line() {
  std::string line = runner::read_command_line();
  return line.empty() ? std::string("quit") : line;
}

std::string mode_of(const std::string& artifact) {
  std::ifstream in(artifact);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto pos = text.find("FAKE_MODE=");
  if (pos == std::string::npos) return "ok";
  auto end = text.find_first_of(" \n\r", pos);
  return text.substr(pos + 10, end - pos - 10);
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  std::string files, output;
  runner::ContainmentSteps why_not;
  why_not.landlock = "started without --files and --output";
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device") device = std::atoi(argv[i + 1]);
    if (a == "--files") files = argv[i + 1];
    if (a == "--output") output = argv[i + 1];
    if (a == "--no-landlock") why_not.landlock = argv[i + 1];
  }
  if (!files.empty() && !output.empty()) {
    const char* fails = std::getenv("FAKE_LANDLOCK_FAILS");
    if (fails && std::string(fails) == "1") {
      emit({{"event", "setup_error"}, {"what", "no usable CUDA device 0: operation not permitted"}});
      return 4;
    }
    why_not.landlock = "";
  }
  int count = std::getenv("FAKE_GPUS") ? std::atoi(std::getenv("FAKE_GPUS")) : 1;
  if (const char* pids = std::getenv("FAKE_PIDFILE")) {  // one line per runner started
    std::ofstream(pids, std::ios::app) << getpid() << "\n";
  }
  emit({{"event", "ready"},
        {"pid", getpid()},
        {"info", {{"device", device}, {"device_count", count}, {"name", "Fake GPU"}, {"cc", "9.0"},
                  {"sms", 132}}}});
  for (;;) {
    std::string line = read_line();
    if (line == "quit") return 0;
    runner::Job job = runner::Job::from_json(nlohmann::json::parse(line));
    if (const char* jobs = std::getenv("FAKE_JOBFILE"))  // one line per job: its L2 state
      std::ofstream(jobs, std::ios::app) << job.mode << " " << job.timing.l2 << "\n";
    if (job.mode == "calibrate") {
      for (size_t i = 0; i < job.points.size(); ++i)
        emit({{"event", "point"}, {"index", i}, {"value", job.points[i].kind == "copy" ? 4000.0 : 7e5}});
      emit({{"event", "done"}});
      continue;
    }
    emit(runner::containment_event(runner::containment_got(runner::FilterProfile::cuda, why_not)));
    if (!files.empty() && job.artifact.rfind(files + "/", 0) != 0) {
      emit({{"event", "load_error"}, {"what", "the candidate is outside --files: " + job.artifact}});
      continue;
    }
    if (!output.empty() && job.output_path != output) {
      emit({{"event", "setup_error"}, {"what", "the output file is not --output: " + job.output_path}});
      continue;
    }
    const std::string mode = mode_of(job.artifact);
    std::shared_ptr<const Operator> defined;
    const Operator& op = job_operator(job.op, job.op_definition, defined);
    const size_t n_in = op.n_inputs();
    bool stopped = false;
    for (size_t ph = 0; ph < job.phases.size() && !stopped; ++ph) {
      const auto& phase = job.phases[ph];
      if (mode == "crash") std::abort();
      if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
      if (mode == "sticky") {
        emit({{"event", "cuda_error"}, {"phase", ph}, {"what", "cudaErrorIllegalAddress: an illegal memory access was encountered"}, {"sticky", true}});
        return 3;
      }
      if (mode == "kernel_error") {
        emit({{"event", "kernel_error"}, {"phase", ph}, {"rc", 3}});
        stopped = true;
        break;
      }
      if (phase.timed) {
        const bool slow = mode == "slow_timing";
        emit({{"event", "timing_start"}, {"phase", ph}, {"estimate_s", slow ? 1.0 : 1e-3}, {"calls_per_sample", 1}});
        if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        // "escaped": the device stays busy 0.5 ms after each sample's end
        // event (work on a stream the runner does not time).
        emit({{"event", "timing"}, {"phase", ph}, {"samples", std::vector<double>(12, 1e-3)},
              {"calls_per_sample", 1}, {"warmup_calls", 3},
              {"after_end_s", std::vector<double>(12, mode == "escaped" ? 5e-4 : 3e-6)},
              {"fenced_s", std::vector<double>(3, mode == "hides_before" ? 3e-3 : 1.01e-3)},
              {"host_call_s", mode == "unhidden" ? 2e-3 : 5e-6},
              {"machine", {{"sm_mhz", 1980}, {"gpu_temp_c", 41}, {"throttle", 0}}},
              {"launch",
               {{"host_us", mode == "unhidden" ? 2000.0 : 5.0},
                {"cover_us", mode == "unhidden" ? 2000.0 : 0.0},
                {"outlasted", mode == "unhidden" ? 9 : 0},
                {"retaken", mode == "unhidden" ? 3 : 0}}}});
        // The last sample's outputs are checked, as on the GPU; below.
      }
      // Inputs and the right outputs, as kevo's reference computes them.
      std::vector<std::vector<char>> bufs;
      std::vector<ConstTensorView> in;
      std::vector<TensorView> out;
      for (size_t i = 0; i < phase.shapes.size(); ++i)
        bufs.emplace_back(static_cast<size_t>(numel(phase.shapes[i])) * dtype_size(job.dtypes[i]) +
                          1);
      for (size_t i = 0; i < n_in; ++i) {
        generate_input(op, i, TensorView{job.dtypes[i], phase.shapes[i], bufs[i].data()},
                       phase.seed);
        in.push_back({job.dtypes[i], phase.shapes[i], bufs[i].data()});
      }
      for (size_t i = n_in; i < phase.shapes.size(); ++i)
        out.push_back({job.dtypes[i], phase.shapes[i], bufs[i].data()});
      op.reference(in, job.scalars, out);
      // "skip_timed": right on every check but the timed calls' (it skipped
      // work on inputs it had seen: the poison is left).
      if (mode == "wrong" || (mode == "skip_timed" && phase.timed))
        store_element(job.dtypes[n_in], bufs[n_in].data(), 0,
                      1 + load_element(job.dtypes[n_in], bufs[n_in].data(), 0));
      if (mode == "unsteady")
        store_element(job.dtypes[n_in], bufs[n_in].data(), 0,
                      static_cast<double>(ph) + load_element(job.dtypes[n_in], bufs[n_in].data(), 0));
      size_t total = 0;
      auto offsets = runner::output_offsets(n_in, job.dtypes, phase.shapes, &total);
      int fd = open(job.output_path.c_str(), O_RDWR | O_CREAT, 0600);
      if (fd < 0 || ftruncate(fd, static_cast<off_t>(std::max<size_t>(total, 1))) != 0) return 5;
      char* map = static_cast<char*>(mmap(nullptr, std::max<size_t>(total, 1), PROT_WRITE, MAP_SHARED, fd, 0));
      close(fd);
      for (size_t i = 0; i < offsets.size(); ++i)
        std::memcpy(map + offsets[i], bufs[n_in + i].data(), bufs[n_in + i].size() - 1);
      munmap(map, std::max<size_t>(total, 1));
      emit({{"event", "check"}, {"phase", ph}, {"seconds", 1e-3}, {"bytes", total}});
      if (read_line() != "continue") stopped = true;
    }
    if (!stopped) emit({{"event", "done"}});
  }
}
