#include "core/process.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "core/error.h"

namespace kevo {
namespace {

SpawnOptions sh(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

TEST(Process, CapturesOutputAndExitCode) {
  ProcessResult r = run_process(sh("echo out; echo err >&2; exit 3"), 10);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  // The grandchild would outlive a kill of the shell alone.
  ProcessResult r = run_process(sh("sleep 30 & sleep 30; echo never"), 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.out.find("never"), std::string::npos);
}

TEST(Process, OutputIsCapped) {
  ProcessResult r = run_process(sh("head -c 100000 /dev/zero | tr '\\0' x"), 10, 1000);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("[... 99000 more bytes dropped]"), std::string::npos);
  EXPECT_LT(r.out.size(), 1100u);
}

TEST(Process, ReportsTheSignal) {
  ProcessResult r = run_process(sh("kill -SEGV $$"), 10);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(signal_description(SIGSEGV).find("SIGSEGV"), std::string::npos);
}

TEST(Process, LimitsApply) {
  SpawnOptions o = sh("ulimit -c; ulimit -v; ulimit -f");
  o.limits.address_space_bytes = int64_t{512} << 20;
  o.limits.file_size_bytes = 1 << 20;
  ProcessResult r = run_process(o, 10);
  EXPECT_EQ(r.out, "0\n524288\n2048\n");
}

TEST(Process, MissingProgramIsAUserError) {
  SpawnOptions o;
  o.argv = {"/nonexistent/program"};
  EXPECT_THROW(run_process(o, 5), UserError);
}

TEST(Process, ExtraDescriptorsArriveInOrder) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  SpawnOptions o = sh("echo hello >&3");
  o.extra_fds = {p[1]};
  ProcessResult r = run_process(o, 10);
  close(p[1]);
  char buf[16] = {};
  ASSERT_GT(read(p[0], buf, sizeof(buf) - 1), 0);
  close(p[0]);
  EXPECT_STREQ(buf, "hello\n");
  EXPECT_EQ(r.exit_code, 0);
}

}  // namespace
}  // namespace kevo
