#include "base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace spmdcheck::base {
namespace {

using Clock = std::chrono::steady_clock;

// A child that died leaves its stdin pipe without a reader; writing to it must give EPIPE, not
// end spmdcheck with SIGPIPE.
void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] { signal(SIGPIPE, SIG_IGN); });
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void AppendTail(std::string& buffer, const char* data, size_t size, size_t max_bytes) {
  buffer.append(data, size);
  if (buffer.size() > max_bytes) buffer.erase(0, buffer.size() - max_bytes);
}

struct Spawned {
  pid_t pid = -1;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// fork + execvpe with the child in a process group of its own and pipes on 0, 1, 2. All pipes
// are close-on-exec in the parent, so children started concurrently do not inherit each other's
// pipe ends (which would keep EOF from arriving).
absl::StatusOr<Spawned> Spawn(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  IgnoreSigpipeOnce();
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (options.env.count(key) == 0) env_strings.push_back(std::move(entry));
  }
  for (const auto& [key, value] : options.env) env_strings.push_back(absl::StrCat(key, "=", value));
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);
  const char* cwd = options.working_directory.empty() ? nullptr : options.working_directory.c_str();

  int in[2], out[2], err[2], status_pipe[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return absl::InternalError("pipe failed");
  }
  if (pipe2(err, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return absl::InternalError("pipe failed");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], status_pipe[0], status_pipe[1]}) {
      close(fd);
    }
    return absl::ResourceExhaustedError(absl::StrCat("fork failed: ", strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // The child dies with us, even when we are killed without a chance to clean up (a SIGKILL, a
    // `timeout`'s SIGTERM) while it is stuck in a compile: its own process group keeps it out of
    // our terminal's signals, so nothing else would end it. (The signal comes when the thread
    // that forked ends; a worker outliving its thread is restarted by its owner when next used.)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // We died before prctl took effect.
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    signal(SIGPIPE, SIG_DFL);
    if (cwd != nullptr && chdir(cwd) != 0) {
      const int e = errno;
      (void)!write(status_pipe[1], &e, sizeof(e));
      _exit(127);
    }
    execvpe(argp[0], argp.data(), envp.data());
    const int e = errno;
    (void)!write(status_pipe[1], &e, sizeof(e));
    _exit(127);
  }
  setpgid(pid, pid);  // Also from the parent, so a kill right after fork reaches the group.
  close(in[0]);
  close(out[1]);
  close(err[1]);
  close(status_pipe[1]);
  int child_errno = 0;
  ssize_t got;
  do {
    got = read(status_pipe[0], &child_errno, sizeof(child_errno));
  } while (got < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (got == sizeof(child_errno)) {
    waitpid(pid, nullptr, 0);
    close(in[1]);
    close(out[0]);
    close(err[0]);
    const std::string what = absl::StrCat("cannot run '", argv[0], "'", cwd ? " in " : "",
                                          cwd ? cwd : "", ": ", strerror(child_errno));
    return child_errno == ENOENT ? absl::NotFoundError(what) : absl::InternalError(what);
  }
  for (int fd : {in[1], out[0], err[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return Spawned{pid, in[1], out[0], err[0]};
}

void KillGroup(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

// When `pid` has ended: kills what it left in its process group (while the group id cannot yet
// be reused, since the leader is not reaped), then reaps it. False while it runs.
bool ReapIfEnded(pid_t pid, bool block, int* status) {
  siginfo_t info{};
  const int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  if (waitid(P_PID, static_cast<id_t>(pid), &info, flags) != 0 || info.si_pid != pid) {
    return false;
  }
  kill(-pid, SIGKILL);
  waitpid(pid, status, 0);
  return true;
}

void FillWaitStatus(int status, ProcessResult& result) {
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
}

}  // namespace

std::string ProcessResult::Describe() const {
  if (timed_out) return absl::StrCat("timed out after ", seconds, " s (killed)");
  if (term_signal != 0) {
    return absl::StrCat("killed by signal ", term_signal, " (", strsignal(term_signal), ")");
  }
  return absl::StrCat("exit ", exit_code);
}

std::vector<std::string> ShellCommand(const std::string& command) {
  return {"/bin/sh", "-c", command};
}

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const ProcessOptions& options) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<Spawned> spawned = Spawn(argv, options);
  if (!spawned.ok()) return spawned.status();
  ProcessResult result;
  size_t written = 0;
  if (options.stdin_data.empty()) CloseFd(spawned->stdin_fd);
  bool exited = false;
  std::optional<Clock::time_point> exited_at;
  char buffer[65536];
  while (true) {
    if (!exited) {
      int status = 0;
      if (ReapIfEnded(spawned->pid, /*block=*/false, &status)) {
        FillWaitStatus(status, result);
        exited = true;
        exited_at = Clock::now();
      }
    }
    if (spawned->stdout_fd < 0 && spawned->stderr_fd < 0 && exited) break;
    // The child is gone (and its group killed) but its pipes are still open somewhere.
    if (exited && SecondsSince(*exited_at) > 1.0) break;
    if (options.timeout_seconds > 0 && SecondsSince(start) > options.timeout_seconds) {
      if (!exited) {
        KillGroup(spawned->pid);
        int status = 0;
        waitpid(spawned->pid, &status, 0);
        FillWaitStatus(status, result);
      }
      result.timed_out = true;
      break;
    }
    std::vector<pollfd> fds;
    if (spawned->stdout_fd >= 0) fds.push_back({spawned->stdout_fd, POLLIN, 0});
    if (spawned->stderr_fd >= 0) fds.push_back({spawned->stderr_fd, POLLIN, 0});
    if (spawned->stdin_fd >= 0) fds.push_back({spawned->stdin_fd, POLLOUT, 0});
    if (fds.empty()) {
      usleep(2000);
      continue;
    }
    poll(fds.data(), fds.size(), 20);
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == spawned->stdin_fd) {
        const ssize_t n =
            write(p.fd, options.stdin_data.data() + written, options.stdin_data.size() - written);
        if (n > 0) written += static_cast<size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == options.stdin_data.size()) {
          CloseFd(spawned->stdin_fd);
        }
        continue;
      }
      const ssize_t n = read(p.fd, buffer, sizeof(buffer));
      if (n > 0) {
        std::string& sink = p.fd == spawned->stdout_fd ? result.stdout_text : result.stderr_text;
        AppendTail(sink, buffer, static_cast<size_t>(n), options.max_output_bytes);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        if (p.fd == spawned->stdout_fd) {
          CloseFd(spawned->stdout_fd);
        } else {
          CloseFd(spawned->stderr_fd);
        }
      }
    }
  }
  CloseFd(spawned->stdin_fd);
  CloseFd(spawned->stdout_fd);
  CloseFd(spawned->stderr_fd);
  result.seconds = SecondsSince(start);
  return result;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const ProcessOptions& options) {
  absl::StatusOr<Spawned> spawned = Spawn(argv, options);
  if (!spawned.ok()) return spawned.status();
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = spawned->pid;
  child->stdin_fd_ = spawned->stdin_fd;
  child->stdout_fd_ = spawned->stdout_fd;
  child->stderr_fd_ = spawned->stderr_fd;
  child->started_ = Clock::now();
  return child;
}

ChildProcess::~ChildProcess() {
  if (!ended_.has_value()) Kill();
  CloseFd(stdin_fd_);
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

absl::Status ChildProcess::WriteLine(const std::string& line) {
  if (stdin_fd_ < 0) return absl::UnavailableError("the child's stdin is closed");
  std::string data = line + "\n";
  size_t written = 0;
  const Clock::time_point start = Clock::now();
  while (written < data.size()) {
    const ssize_t n = write(stdin_fd_, data.data() + written, data.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      // The child is not reading: keep draining its output so it cannot block on a full pipe.
      pollfd p{stdin_fd_, POLLOUT, 0};
      poll(&p, 1, 20);
      DrainStderr(0);
      if (SecondsSince(start) > 60) {
        return absl::DeadlineExceededError("the child did not read its stdin for 60 s");
      }
      continue;
    }
    CloseFd(stdin_fd_);
    return absl::UnavailableError(absl::StrCat("writing to the child failed: ", strerror(errno)));
  }
  return absl::OkStatus();
}

void ChildProcess::DrainStderr(int wait_ms) {
  if (stderr_fd_ < 0) return;
  pollfd p{stderr_fd_, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(stderr_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      AppendTail(stderr_tail_, buffer, static_cast<size_t>(n), max_stderr_bytes_);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) CloseFd(stderr_fd_);
    return;
  }
}

absl::StatusOr<std::string> ChildProcess::ReadLine(double timeout_seconds, size_t max_line_bytes) {
  const Clock::time_point start = Clock::now();
  char buffer[65536];
  while (true) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = stdout_buffer_.substr(0, newline);
      stdout_buffer_.erase(0, newline + 1);
      return line;
    }
    if (stdout_buffer_.size() > max_line_bytes) {
      return absl::DataLossError(
          absl::StrCat("the child wrote a line of over ", max_line_bytes, " bytes"));
    }
    if (stdout_fd_ < 0) return absl::UnavailableError("the child closed its stdout");
    const double left = timeout_seconds - SecondsSince(start);
    if (left <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("no answer within ", timeout_seconds, " s"));
    }
    std::vector<pollfd> fds = {{stdout_fd_, POLLIN, 0}};
    if (stderr_fd_ >= 0) fds.push_back({stderr_fd_, POLLIN, 0});
    const int wait_ms = static_cast<int>(std::min(left * 1000.0, 200.0)) + 1;
    if (poll(fds.data(), fds.size(), wait_ms) <= 0) continue;
    if (fds.size() > 1 && fds[1].revents != 0) DrainStderr(0);
    if (fds[0].revents == 0) continue;
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      stdout_buffer_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      CloseFd(stdout_fd_);
    }
  }
}

void ChildProcess::Kill() {
  if (ended_.has_value() || pid_ <= 0) return;
  KillGroup(pid_);
  int status = 0;
  waitpid(pid_, &status, 0);
  RecordEnd(status, /*drain_ms=*/0);
}

const ProcessResult& ChildProcess::RecordEnd(int status, int drain_ms) {
  ProcessResult result;
  FillWaitStatus(status, result);
  result.seconds = SecondsSince(started_);
  DrainStderr(drain_ms);
  result.stderr_text = stderr_tail_;
  ended_ = std::move(result);
  return *ended_;
}

ProcessResult ChildProcess::Wait(double timeout_seconds) {
  if (ended_.has_value()) return *ended_;
  const Clock::time_point start = Clock::now();
  CloseFd(stdin_fd_);
  while (true) {
    int status = 0;
    if (ReapIfEnded(pid_, /*block=*/false, &status)) return RecordEnd(status, /*drain_ms=*/50);
    if (SecondsSince(start) > timeout_seconds) {
      Kill();
      ended_->timed_out = true;
      return *ended_;
    }
    DrainStderr(20);
    if (stderr_fd_ < 0) usleep(20000);
  }
}

bool ChildProcess::running() {
  if (ended_.has_value()) return false;
  int status = 0;
  if (!ReapIfEnded(pid_, /*block=*/false, &status)) return true;
  RecordEnd(status, /*drain_ms=*/0);
  return false;
}

std::string ChildProcess::StderrTail() {
  DrainStderr(0);
  return stderr_tail_;
}

}  // namespace spmdcheck::base
