// The client of workers/xla/spmdcheck_xla_worker.py: starts the long-lived Python process (jax
// imported once), sends one JSON request per line and reads the answer, restarts the process
// after a crash (an XLA CHECK failure aborts it), kills it after a timeout and recycles it every
// K requests. The protocol is in docs/xla-worker.md. Not thread-safe: one worker per job.
#ifndef SPMDCHECK_TARGET_XLA_WORKER_H_
#define SPMDCHECK_TARGET_XLA_WORKER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/process.h"
#include "ir/literal.h"
#include "nlohmann/json.hpp"

namespace spmdcheck::target {

struct XlaWorkerOptions {
  std::string python;                  // Empty: DefaultXlaPython().
  std::string worker_script;           // Empty: DefaultXlaWorkerScript().
  int64_t devices = 8;                 // Virtual CPU devices at start (grown on demand).
  double start_timeout_seconds = 120;  // Importing jax.
  int64_t recycle_after = 1000;        // Requests per process.
  std::string scratch_dir;             // Empty: a fresh temporary directory.
};

// $SPMDCHECK_XLA_PYTHON, else $SPMDCHECK_XLA_VENV/bin/python, else the data dir's .venv (the
// checkout's, ir/data_dir.h), else python3 on PATH.
std::string DefaultXlaPython();
// $SPMDCHECK_XLA_WORKER, else the data dir's workers/xla/spmdcheck_xla_worker.py.
std::string DefaultXlaWorkerScript();

struct WorkerAnswer {
  nlohmann::json result;  // When the request succeeded.
  // When it did not: "rejected", "unsupported", "protocol", "internal" (the worker's kinds).
  std::string error_kind;
  std::string error_message;
  std::vector<std::string> log;  // What XLA printed on stderr during the request.
  bool ok() const { return error_kind.empty(); }
};

class XlaWorker {
 public:
  explicit XlaWorker(XlaWorkerOptions options);
  ~XlaWorker();
  XlaWorker(const XlaWorker&) = delete;
  XlaWorker& operator=(const XlaWorker&) = delete;

  // Sends `method` with `params` and waits up to `timeout_seconds`. Status errors:
  //   Unavailable      - the worker cannot start (no python, jax does not import): the message
  //                      says why, and it is remembered (no retry storm);
  //   DeadlineExceeded - no answer in time; the worker was killed (restarted on next call);
  //   Aborted          - the worker died during the request (message: how, and the tail of
  //                      what it printed: an XLA CHECK failure lands here);
  //   DataLoss         - it answered garbage or another request's id (killed too).
  // `devices_needed` restarts the worker with more virtual devices when it has fewer.
  absl::StatusOr<WorkerAnswer> Call(const std::string& method, const nlohmann::json& params,
                                    double timeout_seconds, int64_t devices_needed = 1);

  // "jax 0.10.2, jaxlib 0.10.2" once started (empty before).
  const std::string& versions() const { return versions_; }
  // The worker's jaxlib version as numbers ({0, 12, 0, 1}), starting the worker if needed;
  // Unavailable when it cannot start.
  absl::StatusOr<std::vector<int64_t>> JaxlibVersion();
  // Whether the worker's jaxlib reads XLA's named-mesh shardings (HloSharding V3) in HLO text:
  // jaxlib 0.11 and later. False when the worker cannot start.
  bool ReadsNamedShardings();
  // Increments on every (re)start; executables of an earlier generation are gone.
  int64_t generation() const { return generation_; }
  int64_t restarts() const { return restarts_; }
  // Why the worker cannot start, once that is known (then every Call is Unavailable).
  const std::string& unavailable_reason() const { return unavailable_reason_; }
  void Stop();

  // Executables compiled in this process and not yet released: while there are any, the worker
  // is not recycled after `recycle_after` requests (their handles would be gone between a
  // compile and its execution); it is recycled at the first request after the last is released.
  void RetainExecutable() { ++live_executables_; }
  void ReleaseExecutable() {
    if (live_executables_ > 0) --live_executables_;
  }
  int64_t live_executables() const { return live_executables_; }

  // Seconds all answered requests spent inside jaxlib compiling and executing, as the worker
  // times them (the rest of a request is the protocol's cost: ours, not XLA's).
  double xla_seconds() const { return xla_seconds_; }

 private:
  absl::Status EnsureStarted(int64_t devices_needed);
  // The log of request `id` (its last MiB): what the worker printed while serving it.
  std::string RequestLog(int64_t id) const;

  XlaWorkerOptions options_;
  std::string scratch_;
  bool own_scratch_ = false;
  std::unique_ptr<base::ChildProcess> child_;
  int64_t devices_ = 0;
  int64_t requests_in_process_ = 0;
  int64_t live_executables_ = 0;
  int64_t next_id_ = 1;
  int64_t generation_ = 0;
  int64_t restarts_ = 0;
  double xla_seconds_ = 0;
  std::string versions_;
  std::string jaxlib_;
  std::string unavailable_reason_;
};

// Literal <-> the worker's array encoding ({"dtype","shape","data": base64 of the row-major
// little-endian bytes}).
absl::StatusOr<nlohmann::json> EncodeArray(const Literal& literal);
absl::StatusOr<Literal> DecodeArray(const nlohmann::json& value);

}  // namespace spmdcheck::target

#endif  // SPMDCHECK_TARGET_XLA_WORKER_H_
