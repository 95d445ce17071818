// The process runner: exit codes, output capture, timeouts that kill the whole process group,
// missing programs, and the line-based child the XLA worker runs in.
#include "base/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spmdcheck::base {
namespace {

using ::testing::HasSubstr;

TEST(RunProcess, CapturesExitCodeAndBothStreams) {
  absl::StatusOr<ProcessResult> r = RunProcess(ShellCommand("echo out; echo err >&2; exit 7"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->exited());
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
  EXPECT_EQ(r->Describe(), "exit 7");
}

TEST(RunProcess, FeedsStdin) {
  ProcessOptions options;
  options.stdin_data = "hello\nworld\n";
  absl::StatusOr<ProcessResult> r = RunProcess({"wc", "-l"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->stdout_text, HasSubstr("2"));
}

TEST(RunProcess, TimeoutKillsTheWholeGroup) {
  // The shell's background child would keep stdout open forever if only the shell died.
  ProcessOptions options;
  options.timeout_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ProcessResult> r = RunProcess(ShellCommand("sleep 30 & sleep 30"), options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->exited());
  EXPECT_LT(seconds, 10);
  EXPECT_THAT(r->Describe(), HasSubstr("timed out"));
}

TEST(RunProcess, ASignalIsReported) {
  absl::StatusOr<ProcessResult> r = RunProcess(ShellCommand("kill -ABRT $$"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->term_signal, SIGABRT);
  EXPECT_THAT(r->Describe(), HasSubstr("signal 6"));
}

TEST(RunProcess, MissingProgramIsNotFound) {
  absl::StatusOr<ProcessResult> r = RunProcess({"/nonexistent/spmdcheck-no-such-program"});
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
}

TEST(RunProcess, KeepsOnlyTheTailOfLongOutput) {
  ProcessOptions options;
  options.max_output_bytes = 100;
  absl::StatusOr<ProcessResult> r = RunProcess(ShellCommand("seq 1 100000; echo LAST"), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->stdout_text.size(), 100u);
  EXPECT_THAT(r->stdout_text, HasSubstr("LAST"));
}

TEST(ChildProcess, TalksLineByLine) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Start(ShellCommand("while read x; do echo \"got $x\"; echo noise >&2; done"));
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WriteLine("a").ok());
  absl::StatusOr<std::string> line = (*child)->ReadLine(10);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(*line, "got a");
  ASSERT_TRUE((*child)->WriteLine("b").ok());
  EXPECT_EQ(*(*child)->ReadLine(10), "got b");
  EXPECT_THAT((*child)->StderrTail(), HasSubstr("noise"));
  EXPECT_TRUE((*child)->running());
}

TEST(ChildProcess, ReadTimesOutWithoutHanging) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Start(ShellCommand("sleep 30"));
  ASSERT_TRUE(child.ok());
  absl::StatusOr<std::string> line = (*child)->ReadLine(0.3);
  EXPECT_TRUE(absl::IsDeadlineExceeded(line.status())) << line.status();
  (*child)->Kill();
  EXPECT_FALSE((*child)->running());
}

TEST(ChildProcess, DeathIsSeenAsEndOfOutput) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Start(ShellCommand("echo bye >&2; kill -ABRT $$"));
  ASSERT_TRUE(child.ok());
  absl::StatusOr<std::string> line = (*child)->ReadLine(10);
  EXPECT_TRUE(absl::IsUnavailable(line.status())) << line.status();
  const ProcessResult ended = (*child)->Wait(5);
  EXPECT_EQ(ended.term_signal, SIGABRT);
  EXPECT_THAT(ended.stderr_text, HasSubstr("bye"));
  // Writing to a dead child is an error, not a SIGPIPE that ends the test.
  EXPECT_FALSE((*child)->WriteLine("anyone?").ok());
}

// The state letter of /proc/PID/stat ('Z' for a zombie), or 0 when the process is gone.
char ProcessState(pid_t pid) {
  // No file: the process is gone.
  const std::string text =
      base::ReadFile("/proc/" + std::to_string(pid) + "/stat").value_or(std::string());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? 0 : text[paren + 2];
}

TEST(ChildProcess, DiesWithTheProcessThatStartedIt) {
  // A parent that starts a long child and is then killed outright (no destructor runs, as when a
  // `timeout` or the OOM killer ends spmdcheck while XLA compiles): the child must not outlive it.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start({"sleep", "60"});
    const pid_t child_pid = child.ok() ? (*child)->pid() : -1;
    (void)!write(report[1], &child_pid, sizeof(child_pid));
    pause();
    _exit(0);
  }
  close(report[1]);
  pid_t child_pid = -1;
  ASSERT_EQ(read(report[0], &child_pid, sizeof(child_pid)),
            static_cast<ssize_t>(sizeof(child_pid)));
  close(report[0]);
  ASSERT_GT(child_pid, 0);
  ASSERT_NE(ProcessState(child_pid), 0) << "the child never ran";
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  char state = ProcessState(child_pid);
  for (int i = 0; i < 100 && state != 0 && state != 'Z'; ++i) {
    usleep(50'000);
    state = ProcessState(child_pid);
  }
  if (state != 0 && state != 'Z') kill(child_pid, SIGKILL);  // Not left behind by the test.
  EXPECT_TRUE(state == 0 || state == 'Z') << "the child is still running (state " << state << ")";
}

}  // namespace
}  // namespace spmdcheck::base
