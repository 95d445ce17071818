#include "target/xla_worker.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file.h"
#include "ir/data_dir.h"
#include "ir/primitive_type.h"

namespace spmdcheck::target {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

}  // namespace

std::string DefaultXlaPython() {
  if (std::string python = Env("SPMDCHECK_XLA_PYTHON"); !python.empty()) return python;
  if (std::string venv = Env("SPMDCHECK_XLA_VENV"); !venv.empty()) return venv + "/bin/python";
  // A build tree's data dir is the checkout, where ./scripts/run-tests makes .venv; an installed
  // spmdcheck has none and runs the python on PATH.
  const std::string venv_python = SpmdcheckDataDir() + "/.venv/bin/python";
  return access(venv_python.c_str(), X_OK) == 0 ? venv_python : "python3";
}

std::string DefaultXlaWorkerScript() {
  if (std::string script = Env("SPMDCHECK_XLA_WORKER"); !script.empty()) return script;
  return SpmdcheckDataDir() + "/workers/xla/spmdcheck_xla_worker.py";
}

XlaWorker::XlaWorker(XlaWorkerOptions options) : options_(std::move(options)) {
  if (options_.python.empty()) options_.python = DefaultXlaPython();
  if (options_.worker_script.empty()) options_.worker_script = DefaultXlaWorkerScript();
}

XlaWorker::~XlaWorker() {
  Stop();
  if (own_scratch_ && !scratch_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_, ignored);
  }
}

void XlaWorker::Stop() {
  if (child_ == nullptr) return;
  if (child_->running()) {
    // A polite shutdown first; the kill in ~ChildProcess covers a worker that does not listen.
    (void)child_->WriteLine(R"({"id":0,"method":"shutdown"})");
    child_->Wait(2.0);
  }
  child_.reset();
}

absl::Status XlaWorker::EnsureStarted(int64_t devices_needed) {
  if (!unavailable_reason_.empty()) return absl::UnavailableError(unavailable_reason_);
  if (child_ != nullptr && child_->running() && devices_ >= devices_needed &&
      (requests_in_process_ < options_.recycle_after || live_executables_ > 0)) {
    return absl::OkStatus();
  }
  if (child_ != nullptr) {
    Stop();
    ++restarts_;
  }
  if (scratch_.empty()) {
    if (!options_.scratch_dir.empty()) {
      scratch_ = options_.scratch_dir;
      std::filesystem::create_directories(scratch_);
    } else {
      std::string pattern = (std::filesystem::temp_directory_path() / "spmdcheck-xla-XXXXXX");
      if (mkdtemp(pattern.data()) == nullptr) {
        return absl::InternalError(absl::StrCat("mkdtemp failed: ", strerror(errno)));
      }
      scratch_ = pattern;
      own_scratch_ = true;
    }
  }
  if (access(options_.python.c_str(), X_OK) != 0) {
    unavailable_reason_ =
        absl::StrCat("no python at ", options_.python,
                     " (./scripts/run-tests installs jax into .venv; or set SPMDCHECK_XLA_VENV or "
                     "--xla-venv to a virtual environment with jax)");
    return absl::UnavailableError(unavailable_reason_);
  }
  if (access(options_.worker_script.c_str(), R_OK) != 0) {
    unavailable_reason_ = absl::StrCat("no XLA worker script at ", options_.worker_script);
    return absl::UnavailableError(unavailable_reason_);
  }
  devices_ = std::max<int64_t>({options_.devices, devices_needed, devices_});
  base::ProcessOptions process;
  process.env["PYTHONUNBUFFERED"] = "1";
  process.env["TF_CPP_MIN_LOG_LEVEL"] = "1";
  absl::StatusOr<std::unique_ptr<base::ChildProcess>> child =
      base::ChildProcess::Start({options_.python, "-u", options_.worker_script, "--devices",
                                 absl::StrCat(devices_), "--scratch", scratch_},
                                process);
  if (!child.ok()) {
    unavailable_reason_ = std::string(child.status().message());
    return absl::UnavailableError(unavailable_reason_);
  }
  child_ = *std::move(child);
  requests_in_process_ = 0;
  absl::StatusOr<std::string> hello = child_->ReadLine(options_.start_timeout_seconds);
  nlohmann::json ready;
  if (hello.ok()) ready = nlohmann::json::parse(*hello, nullptr, /*allow_exceptions=*/false);
  if (!hello.ok() || !ready.is_object() || ready.value("event", "") != "ready") {
    std::string why;
    if (!hello.ok()) {
      child_->Kill();
      why = absl::StrCat(hello.status().message(), "; ", child_->Wait(1).Describe(),
                         "; stderr: ", Tail(child_->StderrTail(), 2000));
    } else if (ready.is_object() && ready.value("event", "") == "failed") {
      why = ready.value("message", "the worker failed to start");
    } else {
      why = absl::StrCat("the worker greeted with ", Tail(*hello, 300));
    }
    child_.reset();
    unavailable_reason_ = why;
    return absl::UnavailableError(why);
  }
  versions_ =
      absl::StrCat("jax ", ready.value("jax", "?"), ", jaxlib ", ready.value("jaxlib", "?"));
  jaxlib_ = ready.value("jaxlib", "");
  ++generation_;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> XlaWorker::JaxlibVersion() {
  if (jaxlib_.empty()) {
    absl::Status started = EnsureStarted(1);
    if (!started.ok()) return started;
  }
  std::vector<int64_t> parts;
  for (absl::string_view piece : absl::StrSplit(jaxlib_, '.')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(piece, &value)) break;  // "0.12.0.dev2026..." stops at "dev".
    parts.push_back(value);
  }
  if (parts.empty()) {
    return absl::DataLossError(absl::StrCat("unreadable jaxlib version '", jaxlib_, "'"));
  }
  return parts;
}

bool XlaWorker::ReadsNamedShardings() {
  absl::StatusOr<std::vector<int64_t>> version = JaxlibVersion();
  if (!version.ok()) return false;
  const std::vector<int64_t> since = {0, 11};
  return !std::lexicographical_compare(version->begin(), version->end(), since.begin(),
                                       since.end());
}

std::string XlaWorker::RequestLog(int64_t id) const {
  // A runaway log is cut to its last MiB; XLA's CHECK line and stack fit in far less. One byte
  // more is read so that Tail marks a cut log.
  constexpr size_t kKept = size_t{1} << 20;
  absl::StatusOr<std::string> text =
      base::ReadFileTail(absl::StrCat(scratch_, "/request-", id, ".log"), kKept + 1);
  return text.ok() ? Tail(*text, kKept) : "";
}

absl::StatusOr<WorkerAnswer> XlaWorker::Call(const std::string& method,
                                             const nlohmann::json& params, double timeout_seconds,
                                             int64_t devices_needed) {
  absl::Status started = EnsureStarted(devices_needed);
  if (!started.ok()) return started;
  const int64_t id = next_id_++;
  ++requests_in_process_;
  nlohmann::json request = {{"id", id}, {"method", method}, {"params", params}};
  absl::Status written = child_->WriteLine(request.dump());
  absl::StatusOr<std::string> line =
      written.ok() ? child_->ReadLine(timeout_seconds) : absl::StatusOr<std::string>(written);
  if (!line.ok()) {
    if (absl::IsDeadlineExceeded(line.status())) {
      child_->Kill();
      child_.reset();
      return absl::DeadlineExceededError(absl::StrCat("XLA did not answer '", method, "' within ",
                                                      timeout_seconds,
                                                      " s; the worker was killed"));
    }
    // The worker died mid-request: XLA's CHECK failure, an abort, the OOM killer.
    const base::ProcessResult ended = child_->Wait(5);
    std::string log = RequestLog(id);
    if (log.empty()) log = ended.stderr_text;
    child_.reset();
    // The line that says why (an XLA CHECK failure, `F...] Check failed: ...`) comes first,
    // found in the whole log: a long stack trace after it pushes it out of the last 3000 bytes.
    const std::string output = Tail(log, 3000);
    std::string why;
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      if (absl::StrContains(line, "Check failed") || absl::StrContains(line, "RET_CHECK") ||
          (line.size() > 1 && line[0] == 'F' &&
           std::isdigit(static_cast<unsigned char>(line[1])))) {
        why = std::string(line);
        break;
      }
    }
    return absl::AbortedError(absl::StrCat("the XLA worker died during '", method, "' (",
                                           ended.Describe(), ")", why.empty() ? "" : ": ", why,
                                           "; its last output:\n", output));
  }
  nlohmann::json response = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (!response.is_object() || !response.contains("id") || response["id"] != id ||
      (!response.contains("result") && !response.contains("error"))) {
    child_->Kill();
    child_.reset();
    return absl::DataLossError(
        absl::StrCat("the XLA worker answered request ", id, " with: ", Tail(*line, 300)));
  }
  WorkerAnswer answer;
  if (response.contains("xla_seconds") && response["xla_seconds"].is_number()) {
    xla_seconds_ += std::max(0.0, response["xla_seconds"].get<double>());
  }
  if (response.contains("log") && response["log"].is_array()) {
    for (const auto& entry : response["log"]) {
      if (entry.is_string()) answer.log.push_back(entry.get<std::string>());
    }
  }
  if (response.contains("error")) {
    const nlohmann::json& error = response["error"];
    answer.error_kind = error.is_object() ? error.value("kind", "internal") : "internal";
    answer.error_message = error.is_object() ? error.value("message", error.dump()) : error.dump();
    if (answer.error_kind.empty()) answer.error_kind = "internal";
    if (error.is_object() && error.contains("traceback")) {
      absl::StrAppend(&answer.error_message, "\n", error.value("traceback", ""));
    }
    return answer;
  }
  answer.result = response["result"];
  return answer;
}

absl::StatusOr<nlohmann::json> EncodeArray(const Literal& literal) {
  const Shape& shape = literal.shape();
  if (!shape.IsArray()) {
    return absl::UnimplementedError(
        absl::StrCat("only arrays pass to XLA's executables, not ", shape.ToString(false)));
  }
  if (literal.elided()) return absl::InvalidArgumentError("an elided literal has no values");
  std::string bytes(reinterpret_cast<const char*>(literal.raw_data()),
                    static_cast<size_t>(literal.size_bytes()));
  return nlohmann::json{{"dtype", std::string(PrimitiveTypeName(shape.element_type()))},
                        {"shape", shape.dimensions()},
                        {"data", absl::Base64Escape(bytes)}};
}

absl::StatusOr<Literal> DecodeArray(const nlohmann::json& value) {
  if (!value.is_object() || !value.contains("dtype") || !value["dtype"].is_string() ||
      !value.contains("shape") || !value["shape"].is_array() || !value.contains("data") ||
      !value["data"].is_string()) {
    return absl::DataLossError(
        absl::StrCat("malformed array from the worker: ", Tail(value.dump(), 200)));
  }
  std::optional<PrimitiveType> type = PrimitiveTypeFromName(value["dtype"].get<std::string>());
  if (!type.has_value() || !IsArrayType(*type)) {
    return absl::DataLossError(
        absl::StrCat("unknown element type from the worker: ", value["dtype"].dump()));
  }
  std::vector<int64_t> dims;
  for (const auto& d : value["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return absl::DataLossError("malformed array dims from the worker");
    }
    dims.push_back(d.get<int64_t>());
  }
  absl::StatusOr<Literal> literal = Literal::CreateChecked(Shape::Array(*type, dims));
  if (!literal.ok()) return literal.status();
  std::string bytes;
  if (!absl::Base64Unescape(value["data"].get<std::string>(), &bytes) ||
      static_cast<int64_t>(bytes.size()) != literal->size_bytes()) {
    return absl::DataLossError(absl::StrCat("array data of ", bytes.size(), " bytes for ",
                                            literal->shape().ToString(false)));
  }
  if (!bytes.empty()) std::memcpy(literal->raw_data(), bytes.data(), bytes.size());
  return literal;
}

}  // namespace spmdcheck::target
