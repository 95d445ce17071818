#include "target/xla_partitioner.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sdy_sharding_round_trip.h"
#include "target/jax_import.h"

namespace spmdcheck::target {
namespace {

// A worker call that did not produce an answer, as a partitioning outcome.
PartitionOutput FromCallError(const absl::Status& status) {
  PartitionOutput output;
  if (absl::IsUnavailable(status)) {
    output.status = PartitionStatus::kUnavailable;
    output.message = absl::StrCat("XLA is not available: ", status.message());
  } else if (absl::IsDeadlineExceeded(status)) {
    output.status = PartitionStatus::kTimeout;
    output.message = std::string(status.message());
  } else if (absl::IsAborted(status)) {
    output.status = PartitionStatus::kCrash;
    output.message = std::string(status.message());
  } else {
    // Garbage or a wrong answer from the worker: our harness, not XLA.
    output.status = PartitionStatus::kUnsupported;
    output.message = absl::StrCat("the XLA worker misbehaved: ", status.message());
  }
  return output;
}

std::string StringOr(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

}  // namespace

// An executable in the worker. While pinned (from its compile on) the worker is not recycled,
// so its handle stays valid; an unpinned one (a cached reference executable between trials)
// lets the worker recycle and then reports Unavailable when run.
class XlaExecutable : public Executable {
 public:
  XlaExecutable(std::shared_ptr<XlaWorker> worker, int64_t handle, int64_t devices,
                double timeout_seconds, std::vector<Shape> global_shapes)
      : worker_(std::move(worker)),
        handle_(handle),
        generation_(worker_->generation()),
        devices_(devices),
        timeout_seconds_(timeout_seconds),
        global_shapes_(std::move(global_shapes)) {
    worker_->RetainExecutable();
  }
  ~XlaExecutable() override {
    Unpin();
    if (worker_->generation() == generation_ && worker_->unavailable_reason().empty()) {
      (void)worker_->Call("release", {{"handle", handle_}}, 10);
    }
  }
  XlaExecutable(const XlaExecutable&) = delete;
  XlaExecutable& operator=(const XlaExecutable&) = delete;

  void Pin() {
    if (!pinned_) worker_->RetainExecutable();
    pinned_ = true;
  }
  void Unpin() {
    if (pinned_) worker_->ReleaseExecutable();
    pinned_ = false;
  }
  // Whether it still lives in the worker (not restarted since its compile).
  bool alive() const { return worker_->generation() == generation_; }

  int64_t num_devices() const override { return devices_; }

  absl::StatusOr<std::vector<std::vector<Literal>>> Run(
      const std::vector<std::vector<Literal>>& arguments) override {
    if (worker_->generation() != generation_) {
      return absl::UnavailableError(
          "the XLA worker was restarted since this executable was compiled");
    }
    nlohmann::json args = nlohmann::json::array();
    for (const std::vector<Literal>& per_device : arguments) {
      nlohmann::json values = nlohmann::json::array();
      for (const Literal& value : per_device) {
        absl::StatusOr<nlohmann::json> encoded = EncodeArray(value);
        if (!encoded.ok()) return encoded.status();
        values.push_back(*std::move(encoded));
      }
      args.push_back(std::move(values));
    }
    nlohmann::json shapes = nlohmann::json::array();
    for (const Shape& shape : global_shapes_) {
      shapes.push_back(shape.IsArray() ? nlohmann::json(shape.dimensions()) : nlohmann::json());
    }
    absl::StatusOr<WorkerAnswer> answer = worker_->Call(
        "execute", {{"handle", handle_}, {"arguments", args}, {"global_shapes", shapes}},
        timeout_seconds_, devices_);
    if (!answer.ok()) return answer.status();
    if (!answer->ok()) {
      return absl::UnknownError(absl::StrCat("XLA's execution failed (", answer->error_kind,
                                             "): ", answer->error_message));
    }
    std::vector<std::vector<Literal>> outputs;
    if (!answer->result.contains("outputs") || !answer->result["outputs"].is_array()) {
      return absl::DataLossError("the XLA worker returned no outputs");
    }
    for (const auto& per_device : answer->result["outputs"]) {
      std::vector<Literal> values;
      for (const auto& value : per_device) {
        absl::StatusOr<Literal> decoded = DecodeArray(value);
        if (!decoded.ok()) return decoded.status();
        values.push_back(*std::move(decoded));
      }
      outputs.push_back(std::move(values));
    }
    return outputs;
  }

 private:
  std::shared_ptr<XlaWorker> worker_;
  int64_t handle_;
  int64_t generation_;
  int64_t devices_;
  double timeout_seconds_;
  std::vector<Shape> global_shapes_;
  bool pinned_ = true;
};

namespace {

// A dump as a module; Shardy's form (jaxlib 0.12 writes manual computations as `xla.sdy.*`
// custom-calls in the module XLA received) rewritten as GSPMD's, which the oracle reads.
absl::StatusOr<std::unique_ptr<HloModule>> ParseDump(const nlohmann::json& modules, const char* key,
                                                     const char* what) {
  const std::string text = StringOr(modules, key);
  if (text.empty()) return absl::NotFoundError(absl::StrCat("XLA wrote no ", what, " dump"));
  const std::string path = absl::StrCat("<XLA's ", what, " module>");
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, {.path = path});
  if (!parsed.ok()) return parsed.status();
  if (!HasShardyRoundTrip(*parsed->module)) return std::move(parsed->module);
  absl::StatusOr<int64_t> lowered = LowerShardyRoundTrip(*parsed->module);
  if (!lowered.ok()) {
    return absl::UnimplementedError(
        absl::StrCat(path, ": Shardy's form: ", lowered.status().message()));
  }
  // New instructions were appended: print and parse again for program order.
  absl::StatusOr<ParsedModule> again = ParseHloModule(
      PrintModule(*parsed->module), {.path = absl::StrCat(path, " as GSPMD's form")});
  if (!again.ok()) return again.status();
  return std::move(again->module);
}

// Whether jax lowered `text` for Shardy (sdy dialect) rather than GSPMD (mhlo.sharding).
bool LoweredForShardy(absl::string_view text) {
  return absl::StrContains(text, "sdy.mesh") || absl::StrContains(text, "#sdy.sharding") ||
         absl::StrContains(text, "sdy.manual_computation");
}

}  // namespace

std::shared_ptr<XlaWorker> MakeXlaWorker(const TargetOptions& options) {
  XlaWorkerOptions worker;
  worker.python = options.python;
  worker.worker_script = options.worker_script;
  worker.recycle_after = options.recycle_after;
  return std::make_shared<XlaWorker>(std::move(worker));
}

PartitionerCapabilities XlaPartitioner::Capabilities(bool shardy) {
  PartitionerCapabilities c;
  c.reduce_seconds = 90;  // A compile per reduction step.
  c.xla_findings = true;
  c.min_devices = 2;
  c.prefers_one_mesh = shardy;
  c.compiles_sdy_programs = shardy;
  return c;
}

XlaPartitioner::XlaPartitioner(std::string spec, std::shared_ptr<XlaWorker> worker,
                               const TargetOptions& options)
    : spec_(std::move(spec)),
      shardy_(spec_ == "shardy"),
      worker_(std::move(worker)),
      timeout_seconds_(options.compile_timeout_seconds) {}

bool XlaPartitioner::UsesJaxSource(const HloModule& global) const {
  return !global.jax_source().empty() && LoweredForShardy(global.jax_source()) == shardy_;
}

absl::StatusOr<std::unique_ptr<HloModule>> XlaPartitioner::ImportJaxProgram(
    const std::string& text, const std::string& name) {
  return ImportStableHlo(*worker_, text, name, nullptr, timeout_seconds_);
}

std::string XlaPartitioner::HloTextFor(const HloModule& module) {
  PrintOptions options;
  options.named_shardings = worker_->ReadsNamedShardings();
  return PrintModule(module, options);
}

absl::StatusOr<PartitionOutput> XlaPartitioner::Partition(const HloModule& global,
                                                          int64_t num_partitions) {
  if (global.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  // Another check begins: the last one's reference executable is released, so that no
  // executable outlives its case and the worker can be recycled between cases.
  global_run_ = {};
  const bool jax_route = UsesJaxSource(global);
  nlohmann::json params = {{"num_partitions", num_partitions},
                           {"partitioner", shardy_ ? "shardy" : "gspmd"},
                           {"dumps", true},
                           {"dump_passes", dump_passes_}};
  if (jax_route) {
    params["mlir"] = global.jax_source();
  } else {
    params["hlo"] = HloTextFor(global);
  }
  absl::StatusOr<WorkerAnswer> answer =
      worker_->Call("compile", params, timeout_seconds_, num_partitions);
  if (!answer.ok()) {
    // A crash or a timeout still says which XLA it was (the version matrix prints it).
    PartitionOutput failed = FromCallError(answer.status());
    failed.report.name = shardy_ ? "shardy" : "xla (GSPMD)";
    failed.report.version = worker_->versions();
    return failed;
  }
  PartitionOutput output;
  if (answer->ok() && answer->result.contains("pass_dumps") &&
      answer->result["pass_dumps"].is_array()) {
    for (const auto& dump : answer->result["pass_dumps"]) {
      output.pass_dumps.push_back({StringOr(dump, "file"), StringOr(dump, "text")});
    }
  }
  output.report.name = shardy_ ? "shardy" : "xla (GSPMD)";
  output.report.version = worker_->versions();
  if (jax_route) {
    output.report.notes.push_back(
        "compiled from jax's StableHLO with jax.jit's compile options (the route jax takes)");
  }
  for (const std::string& line : answer->log) {
    // Printed on every GSPMD compile since jax 0.11: noise in every report.
    if (absl::StrContains(line, "sharding propagation is going to be deprecated")) continue;
    output.report.warnings.push_back(line);
  }
  if (!answer->ok()) {
    if (answer->error_kind == "rejected" &&
        absl::StrContains(answer->error_message, "can't be translated to XLA HLO")) {
      // XLA's StableHLO -> HLO translation refuses what its HLO -> StableHLO translation wrote
      // (jaxlib 0.10.2: a while loop whose loop-invariant state the import turned into implicit
      // captures, its tuple sharding left with the old element count). That is the route
      // spmdcheck takes into XLA, which jax programs never take: the partitioner was not
      // reached, so no verdict on it.
      output.status = PartitionStatus::kUnsupported;
      output.message = absl::StrCat(
          "the HLO -> StableHLO -> HLO route into XLA cannot carry this module (XLA's "
          "translation refuses its own output; the partitioner was not reached): ",
          answer->error_message.substr(0, answer->error_message.find('\n')));
    } else if (answer->error_kind == "rejected") {
      output.status = PartitionStatus::kRejected;
      output.message = answer->error_message;
    } else if (answer->error_kind == "unsupported") {
      output.status = PartitionStatus::kUnsupported;
      output.message = answer->error_message;
    } else {
      output.status = PartitionStatus::kUnsupported;
      output.message =
          absl::StrCat("the XLA worker failed (", answer->error_kind, "): ", answer->error_message);
    }
    return output;
  }
  const nlohmann::json& result = answer->result;
  if (result.contains("compile_seconds") && result["compile_seconds"].is_number()) {
    output.report.seconds = result["compile_seconds"].get<double>();
  }
  const nlohmann::json modules = result.value("modules", nlohmann::json::object());
  int64_t handle = result.value("handle", int64_t{0});
  if (handle > 0) {
    std::vector<Shape> shapes;
    for (const HloInstruction* p : global.entry()->parameters()) shapes.push_back(p->shape());
    output.executable = std::make_shared<XlaExecutable>(worker_, handle, num_partitions,
                                                        timeout_seconds_, std::move(shapes));
  }
  if (shardy_) {
    if (result.contains("shardy_import")) {
      output.report.notes.push_back(
          absl::StrCat("Shardy import: ", result["shardy_import"].dump()));
    }
    std::string fallback;
    for (const std::string& line : answer->log) {
      if (absl::StrContains(line, "falling back") || absl::StrContains(line, "Disabling Shardy")) {
        fallback = line;
      }
    }
    if (!fallback.empty() || StringOr(modules, "shardy").empty()) {
      output.status = PartitionStatus::kUnsupported;
      output.message =
          fallback.empty()
              ? "Shardy did not run: XLA wrote no after_shardy-xla dump"
              : absl::StrCat("Shardy did not run: XLA fell back to GSPMD (", fallback, ")");
      return output;
    }
  }
  output.received_text = StringOr(modules, "received");
  output.partitioned_text = StringOr(modules, "partitioned");
  output.final_text = StringOr(modules, "optimized");
  absl::StatusOr<std::unique_ptr<HloModule>> partitioned =
      ParseDump(modules, "partitioned", "after_spmd-partitioning");
  if (!partitioned.ok()) {
    output.status = PartitionStatus::kUnsupported;
    output.message = absl::StrCat("spmdcheck cannot read XLA's partitioned module: ",
                                  partitioned.status().message());
    return output;
  }
  output.partitioned = *std::move(partitioned);
  absl::StatusOr<std::unique_ptr<HloModule>> received =
      ParseDump(modules, "received", "before_optimizations");
  if (!received.ok()) {
    output.status = PartitionStatus::kUnsupported;
    output.message = absl::StrCat("spmdcheck cannot read the module XLA received: ",
                                  received.status().message());
    return output;
  }
  output.received = *std::move(received);
  absl::StatusOr<std::unique_ptr<HloModule>> propagated =
      ParseDump(modules, "propagated", "before_spmd-partitioning");
  if (propagated.ok()) {
    output.propagated = *std::move(propagated);
  } else {
    output.report.notes.push_back(std::string(propagated.status().message()));
  }
  for (const char* key : {"parameter_shardings", "output_shardings"}) {
    if (!result.contains(key) || !result[key].is_array()) continue;
    std::vector<HloSharding> shardings;
    bool all = true;
    for (const auto& entry : result[key]) {
      absl::StatusOr<HloSharding> sharding =
          entry.is_string() ? ParseSharding(entry.get<std::string>())
                            : absl::StatusOr<HloSharding>(absl::DataLossError("not a string"));
      if (!sharding.ok()) {
        output.report.notes.push_back(absl::StrCat("cannot read XLA's ", key, " ", entry.dump(),
                                                   ": ", sharding.status().message()));
        all = false;
        break;
      }
      shardings.push_back(*std::move(sharding));
    }
    if (!all) continue;
    if (std::string(key) == "parameter_shardings") {
      output.parameter_shardings = std::move(shardings);
    } else {
      output.output_shardings = std::move(shardings);
    }
  }
  output.status = PartitionStatus::kOk;
  return output;
}

absl::StatusOr<std::string> XlaPartitioner::StableHloText(const HloModule& global,
                                                          int64_t num_partitions) {
  nlohmann::json params = {{"hlo", HloTextFor(global)},
                           {"num_partitions", num_partitions},
                           {"partitioner", shardy_ ? "shardy" : "gspmd"}};
  absl::StatusOr<WorkerAnswer> answer =
      worker_->Call("stablehlo", params, timeout_seconds_, num_partitions);
  if (!answer.ok()) {
    if (absl::IsUnavailable(answer.status())) {
      return absl::UnavailableError(
          absl::StrCat("XLA is not available: ", answer.status().message()));
    }
    return answer.status();
  }
  if (!answer->ok()) {
    return absl::UnknownError(absl::StrCat("the XLA worker could not convert the module (",
                                           answer->error_kind, "): ", answer->error_message));
  }
  const std::string text = StringOr(answer->result, "mlir");
  if (text.empty()) return absl::DataLossError("the XLA worker returned no StableHLO text");
  return text;
}

absl::StatusOr<std::vector<Literal>> XlaPartitioner::RunGlobal(
    const HloModule& global, const std::vector<Literal>& arguments) {
  global_run_name_ = "single-device run";
  const bool jax_route = UsesJaxSource(global);
  // A jax program with manual computations (shard_map) has no one-device meaning.
  const bool manual =
      jax_route && shardy_ && absl::StrContains(global.jax_source(), "sdy.manual_computation");
  const int64_t devices = manual ? global.num_partitions() : 1;
  if (manual) {
    global_run_name_ =
        "run of the same program with every value outside its manual computations replicated";
  }
  nlohmann::json params = {
      {"num_partitions", devices}, {"partitioner", manual ? "shardy" : "none"}, {"dumps", false}};
  if (manual) params["replicate_outside_manual"] = true;
  if (jax_route) {
    params["mlir"] = global.jax_source();  // The program jax would run.
  } else {
    params["hlo"] = HloTextFor(global);
  }
  // Trials of one check run the same program on other inputs: compiled once (as a jax loop
  // would), until the next Partition or a worker restart.
  std::string key = params.dump();
  if (global_run_.executable == nullptr || global_run_.key != key ||
      !global_run_.executable->alive()) {
    global_run_ = {};
    absl::StatusOr<WorkerAnswer> answer =
        worker_->Call("compile", params, timeout_seconds_, devices);
    if (!answer.ok()) return answer.status();
    if (!answer->ok()) {
      return absl::UnknownError(absl::StrCat("XLA's compile of the reference (", global_run_name_,
                                             ") failed (", answer->error_kind,
                                             "): ", answer->error_message));
    }
    const int64_t handle = answer->result.value("handle", int64_t{0});
    std::vector<Shape> shapes;
    for (const HloInstruction* p : global.entry()->parameters()) shapes.push_back(p->shape());
    global_run_.executable = std::make_shared<XlaExecutable>(worker_, handle, devices,
                                                             timeout_seconds_, std::move(shapes));
    global_run_.key = std::move(key);
  }
  // Pinned while it runs; between trials it does not keep the worker from being recycled.
  global_run_.executable->Pin();
  // Whole inputs on every device (the reference's parameters are replicated).
  std::vector<std::vector<Literal>> per_parameter;
  for (const Literal& argument : arguments) {
    per_parameter.push_back(std::vector<Literal>(static_cast<size_t>(devices), argument));
  }
  absl::StatusOr<std::vector<std::vector<Literal>>> outputs =
      global_run_.executable->Run(per_parameter);
  global_run_.executable->Unpin();
  if (!outputs.ok()) return outputs.status();
  std::vector<Literal> leaves;
  for (std::vector<Literal>& per_device : *outputs) {
    if (per_device.size() != static_cast<size_t>(devices)) {
      return absl::DataLossError("the reference run returned a wrong number of device outputs");
    }
    leaves.push_back(std::move(per_device[0]));  // Replicated: every device holds the result.
  }
  return leaves;
}

}  // namespace spmdcheck::target
