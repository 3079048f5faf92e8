// kevo's side of the runner protocol, shared by every target: reading JSON
// event lines from a runner's pipe, answering a check, and the one loop that
// drives a runner through a job (deadlines, events, the candidate's outcome).
// A target supplies only what is its own: how the runner is started, where a
// check's outputs are, and what becomes of the runner when a job ends.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "targets/target.h"

namespace kevo {

// A line reader over a runner's event pipe (non-blocking descriptor).
class EventReader {
 public:
  explicit EventReader(int fd) : fd_(fd) {}
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;
  ~EventReader();
  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  // Reads what is available; complete lines go to `lines`.
  void read_available(std::vector<std::string>& lines);

 private:
  static constexpr size_t kMaxLine = 64u << 20;
  int fd_;
  std::string partial_;
};

// Writes `line` and a newline; a runner that is gone is not an error here
// (its exit tells the rest).
void write_line(int fd, const std::string& line);

// "KEVO_ERR_UNSUPPORTED" for 1, ...
const char* kernel_rc_name(int rc);

namespace runner {

// A new event pipe for a runner: the read end (non-blocking, close-on-exec)
// and the write end to hand to the child as descriptor 3. Throws UserError.
struct EventPipe {
  int read_fd = -1;
  int write_fd = -1;
};
EventPipe make_event_pipe();

// The environment a runner starts with, and so every candidate in it: only
// what a runner, the C runtime, OpenMP and the CUDA driver read from kevo's
// own environment (PATH, LANG and LC_*, TZ, TMPDIR, LD_LIBRARY_PATH, OMP_*,
// GOMP_*, KMP_*, CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, CUDA_MODULE_LOADING,
// CUDA_CACHE_*, NVIDIA_*, kevo's runner settings KEVO_LOG, KEVO_CUDA_FLUSH,
// KEVO_CUDA_COVER_US and KEVO_CUDA_NO_FILTER) and the variables named in KEVO_RUNNER_ENV (comma
// separated). The user's API keys, tokens and the rest stay out of reach.
std::vector<std::string> runner_environment();

// Why a loop over a runner's events ended.
enum class LoopEnd {
  settled,      // an event settled the job
  closed,       // the event pipe closed: the runner is gone
  no_progress,  // the "no progress" deadline passed (the runner still runs)
  hard_limit,   // the hard limit passed (the runner still runs)
};

// The lowest layer, for loops that are not a candidate's job (a runner's
// start, a roof calibration): until `on_event` returns true, the pipe closes
// or a deadline passes, polls the event pipe and stdout/stderr (at most
// 250 ms at a time), drains stdout/stderr into `so`/`se` and hands each
// event line to `on_event`. Lines that are not JSON are skipped (a kernel may
// write to descriptor 3). `deadline` is the "no progress" deadline, which
// `on_event` may move; `hard` does not move. Both are monotonic_seconds().
// `on_wake`, where given, is called each time the loop wakes (at least every
// `max_wait_s`) before the events are read; returning true ends the loop as
// settled.
using RawEventFn = std::function<bool(const nlohmann::json& event, double& deadline)>;
LoopEnd pump_events(ChildProcess& child, EventReader& events, CappedBuffer& so, CappedBuffer& se,
                    double hard, double& deadline, const RawEventFn& on_event,
                    const std::function<bool()>& on_wake = {}, double max_wait_s = 0.25);

// How long the process `pid`'s main thread has waited for a CPU while ready
// to run (/proc/PID/schedstat), in seconds; -1 where the kernel does not say.
double runqueue_wait_s(pid_t pid);

// Whether the runner `pid` still holds kevo's pipes where kevo gave them:
// each (descriptor, pipe inode) of `expected`. Empty when it does, else what
// changed ("descriptor 3 (kevo's event pipe) is now pipe:[123]"). A process
// that is gone, or a /proc kevo cannot read, says nothing.
struct HeldPipe {
  int fd;
  ino_t inode;
  const char* what;
};
std::string replaced_descriptors(pid_t pid, const std::vector<HeldPipe>& expected);
// The inode of the pipe (or file) behind descriptor `fd` of this process (0 if none).
ino_t inode_of(int fd);

// What a job's own events (those drive_job leaves to the target) come to.
enum class Reply {
  ignore,   // not this job's: the deadline stays, a check is not answered
  go_on,    // the job goes on: the deadline moves, a check is answered "continue"
  settled,  // `out` is settled: a check is answered "stop"
};
// `timeout_s` starts as the job's "no progress" timeout; a handler may raise
// it for the step the event starts (the runner is quiet while it times).
using JobEventFn =
    std::function<Reply(const nlohmann::json& event, RunOutcome& out, double& timeout_s)>;

// One job on a runner that has been sent it, as a target runs it.
struct JobLoop {
  double start = 0;           // when the job's time began: the hard limit counts from it
  double first_deadline = 0;  // the "no progress" deadline until the first event
  double timeout_s = 0;       // "no progress" timeout: each event moves the deadline to now + this
  double max_total_s = 0;     // hard limit from `start`
  // The details of a load_error and a setup_error: "<prefix>: <what>". The
  // defaults are the cpu target's words; cuda's are its own (see there).
  std::string load_error = "cannot load the candidate";
  std::string setup_error = "runner";
  // Called once the loop has ended and stdout/stderr were drained: the target
  // ends, reaps or keeps its runner, and may reword `out` (a deadline's
  // detail, a closed pipe's cause). `out` is timed_out with a detail for a
  // deadline; crashed, "the runner exited without reporting", for a closed
  // pipe. drive_job does not touch the runner after this.
  std::function<void(LoopEnd end, RunOutcome& out)> finish;
  // The runner waits for "go" after its timing_start event: drive_job sends
  // it and notes the time (RunOutcome::timing_go_at); the timing event's
  // handler then notes kevo's clock around the samples (timing_wall_s).
  bool timing_go = false;
  // With timing_go: count the runner's threads on the CPU's performance
  // counters from "go" to the timing event (RunOutcome::cpu_counters).
  bool count_cpu = false;
  // Descriptors the runner must keep (its command and event pipes): checked
  // each time the loop wakes, at least every `watch_s`. A candidate that
  // puts its own pipe in their place (to rewrite, hold back or make up what
  // the runner and kevo say to each other) ends as a crash.
  std::vector<HeldPipe> held;
  double watch_s = 0.25;
};

// Drives a runner through one job: applies the deadlines; decodes ready (the
// deadline restarts), signal, load_error, setup_error, note and done; hands
// the other events to `on_event` and answers a check "continue" or "stop" as
// it replies. Stops at the first event that settles the job. Returns the
// outcome with stdout/stderr (`so`/`se`, the target's caps) and its seconds.
RunOutcome drive_job(ChildProcess& child, EventReader& events, CappedBuffer& so, CappedBuffer& se,
                     const JobLoop& loop, const JobEventFn& on_event);

// A check's outputs where kevo can read them: `base` is the first output of
// the phase, laid out by output_offsets; `hold` keeps them readable until
// the check is done. A non-empty `error` means they cannot be read.
struct CheckOutputs {
  const char* base = nullptr;
  std::shared_ptr<void> hold;
  std::string error;
};

// What a kernel job's events need from its target.
struct KernelJob {
  const Task* task = nullptr;
  const std::vector<RunPhase>* phases = nullptr;
  CheckFn check;
  ProgressFn progress;  // may be empty
  // The outputs of phase `phase`'s check; `bytes`: what the "check" event
  // says the runner wrote (0 where it does not say).
  std::function<CheckOutputs(size_t phase, size_t bytes)> outputs;
  // The "no progress" timeout after a "timing_start" event, while the runner
  // takes its samples. Each target keeps its own allowance (see the targets).
  std::function<double(const nlohmann::json& timing_start, const RunPhase& phase)> timing_timeout;
  // An overrun's detail names how far past the end the kernel wrote (cpu) or
  // not (cuda: its detail never did).
  bool overrun_offset = true;
};

// The events of a kernel job: check (builds the output views, calls the
// check), timing_start, timing (samples and machine metrics), kernel_error
// and overrun. An event naming a phase the job does not have is ignored.
JobEventFn kernel_events(const KernelJob& job);

}  // namespace runner
}  // namespace kevo
