// The one process runner of spmdcheck: child processes in their own process group, with
// timeouts, captured stdout/stderr (the tail kept), and a kill of the whole group. It serves the
// XLA worker (a long-lived child spoken to line by line), `cmd:` partitioners, the nightly job's
// runs and `reduce --until-cmd` (run to completion).
#ifndef SPMDCHECK_BASE_PROCESS_H_
#define SPMDCHECK_BASE_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace spmdcheck::base {

struct ProcessOptions {
  // Wall-clock limit; the process group is killed (SIGKILL) when it is reached. 0: none.
  double timeout_seconds = 0;
  // Extra environment variables (added to, or replacing, the parent's).
  std::map<std::string, std::string> env;
  std::string working_directory;  // Empty: the parent's.
  std::string stdin_data;         // Written to the child's stdin, which is then closed.
  // Only the last this many bytes of stdout/stderr are kept (run-to-completion mode).
  size_t max_output_bytes = 1 << 20;
};

struct ProcessResult {
  bool timed_out = false;
  int exit_code = -1;   // When the process exited normally.
  int term_signal = 0;  // When a signal ended it (SIGKILL after a timeout included).
  std::string stdout_text;
  std::string stderr_text;  // The tail when it was longer than max_output_bytes.
  double seconds = 0;

  bool exited() const { return term_signal == 0 && !timed_out && exit_code >= 0; }
  // "exit 3", "killed by signal 6 (Aborted)", "timed out after 10 s".
  std::string Describe() const;
};

// Runs argv[0] (searched in PATH) to completion. Errors only when the process cannot be started
// (no such program: NotFound); a crash or timeout is a result.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const ProcessOptions& options = {});

// `sh -c COMMAND` for commands given as one string by users (`--until-cmd`, `cmd:`).
std::vector<std::string> ShellCommand(const std::string& command);

// A long-lived child spoken to line by line on stdin/stdout; its stderr is drained into a
// bounded buffer while lines are awaited. Destroying it kills the process group.
class ChildProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv,
                                                             const ProcessOptions& options = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Writes `line` plus '\n'. Error when the child has closed its stdin (it died).
  absl::Status WriteLine(const std::string& line);
  // The next stdout line (without '\n'). DeadlineExceeded after `timeout_seconds`, Unavailable
  // when the child closed stdout (exited or crashed; see Wait()). Lines longer than
  // `max_line_bytes` are an error (the child is talking nonsense).
  absl::StatusOr<std::string> ReadLine(double timeout_seconds,
                                       size_t max_line_bytes = size_t{1} << 30);
  // SIGKILL to the whole process group, then reaps the child.
  void Kill();
  // Waits up to `timeout_seconds` for the child to exit (killing it after that) and returns how
  // it ended.
  ProcessResult Wait(double timeout_seconds);
  bool running();
  pid_t pid() const { return pid_; }
  // The last bytes the child wrote to stderr so far (drained while reading lines).
  std::string StderrTail();

 private:
  ChildProcess() = default;
  void DrainStderr(int wait_ms);
  // Records how the reaped child ended (wait status `status`, its stderr's tail after draining
  // for up to `drain_ms`) as the result every later call returns.
  const ProcessResult& RecordEnd(int status, int drain_ms);

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string stdout_buffer_;
  std::string stderr_tail_;
  size_t max_stderr_bytes_ = 1 << 16;
  std::optional<ProcessResult> ended_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace spmdcheck::base

#endif  // SPMDCHECK_BASE_PROCESS_H_
