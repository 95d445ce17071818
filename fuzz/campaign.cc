#include "fuzz/campaign.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "fuzz/program_gen.h"
#include "fuzz/reducer.h"
#include "ir/hlo_printer.h"
#include "partitioner/injected_bugs.h"
#include "target/check_pipeline.h"

namespace spmdcheck::fuzz {

using target::CheckOptions;
using target::CheckOutcome;
using target::CheckPartitioning;
using target::CheckStatus;
namespace {

using Clock = std::chrono::steady_clock;

uint64_t CaseSeed(uint64_t seed, int64_t index) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index) + 1;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The bytes of case `case_seed`: a header and 1..max steps, uniformly many.
std::vector<uint8_t> CaseBytes(uint64_t case_seed, const ProgramGenOptions& gen) {
  std::mt19937_64 rng(case_seed);
  const int64_t steps =
      1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(gen.max_instructions));
  std::vector<uint8_t> bytes(kRecipeHeaderBytes + steps * kRecipeStepBytes);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// The opcode of the global instruction `name` in `program`, or `name` itself.
std::string OpcodeOf(const HloModule& program, const std::string& name) {
  for (const auto& c : program.computations()) {
    if (HloInstruction* i = c->FindInstruction(name)) {
      return std::string(HloOpcodeString(i->opcode()));
    }
  }
  return name;
}

// The opcode of the global instruction a failure points at: the first diverging one, else the
// root (for crashes: the instruction the message starts with).
std::string Where(const CheckOutcome& outcome, const HloModule& program) {
  if (outcome.report.verdict == Verdict::kFails && outcome.report.first_divergence.has_value()) {
    const std::string& holds = outcome.report.first_divergence->holds;
    // XLA's received module renames instructions (d -> d.1): match the name it came from.
    for (const std::string& name : {holds, holds.substr(0, holds.rfind('.'))}) {
      const std::string op = OpcodeOf(program, name);
      if (op != name) return op;
    }
  }
  if (outcome.status == CheckStatus::kCrash && outcome.judged_global == nullptr) {
    const std::string& m = outcome.message;
    const std::string first = m.substr(0, std::min<size_t>(m.find_first_of(" :("), 24));
    const std::string op = OpcodeOf(program, first);
    if (op != first) return op;
  }
  return std::string(HloOpcodeString(program.entry()->root()->opcode()));
}

// Where in XLA a crash or rejection happened: the source file of its first `file.cc:LINE`
// (`spmd_partitioner_util` of "F1201 ... spmd_partitioner_util.h:118] Check failed"), else
// `fallback`.
std::string XlaSourceFile(const std::string& message, const std::string& fallback) {
  if (message.find("can't be translated to XLA HLO") != std::string::npos) {
    return "stablehlo-to-hlo";
  }
  for (const char* ext : {".cc:", ".h:"}) {
    const size_t at = message.find(ext);
    if (at == std::string::npos) continue;
    size_t begin = at;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(message[begin - 1])) ||
                         message[begin - 1] == '_')) {
      --begin;
    }
    if (begin < at) return message.substr(begin, at - begin);
  }
  return fallback;
}

// The signature of a case that did not hold, or empty for a plain unknown. `claim` says whether
// it is a bug claim or a difference to investigate.
std::string Signature(const std::string& spec, const CheckOutcome& outcome,
                      const HloModule& program, bool* claim) {
  *claim = true;
  const bool ours = spec == "reference";
  std::string kind;
  switch (outcome.status) {
    case CheckStatus::kHolds:
      return "";
    case CheckStatus::kFails:
      kind = ours ? "wrong-result." + Where(outcome, program)
                  : (outcome.finding == target::Finding::kConfirmedByXla ? "miscompile."
                                                                         : "wrong-result.") +
                        Where(outcome, program);
      break;
    case CheckStatus::kCrash:
      kind =
          "crash." + (ours ? Where(outcome, program) : XlaSourceFile(outcome.message, "compile"));
      break;
    case CheckStatus::kRejected:
      kind = "xla-rejects-valid." + XlaSourceFile(outcome.message, "compile");
      break;
    case CheckStatus::kTimeout:
      kind = "timeout";
      break;
    case CheckStatus::kUnsupported:
      if (outcome.finding == target::Finding::kOracleOnly) {
        kind = "oracle-only." + Where(outcome, program);
      } else if (outcome.finding == target::Finding::kOracleDisagrees) {
        kind = "oracle-disagrees." + Where(outcome, program);
      } else if (outcome.finding == target::Finding::kReadsInputPadding) {
        kind = "reads-input-padding." + Where(outcome, program);
      } else {
        return "";
      }
      *claim = false;
      break;
  }
  if (kind == "timeout") *claim = false;
  std::string signature = ours ? kind : absl::StrCat(spec, ".", kind);
  for (char& ch : signature) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-')) ch = '_';
  }
  return signature;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  // Keep reasons comparable: drop instruction names after "(".
  return line.substr(0, 120);
}

}  // namespace

std::string CampaignReport::ToString() const {
  std::string out = absl::StrFormat(
      "cases: %d (%.1f/s), holds: %d, failures: %d in %d signature(s), unsupported: %d, "
      "elapsed %.1fs\n",
      progress.cases, progress.elapsed > 0 ? progress.cases / progress.elapsed : 0.0,
      progress.holds, progress.failures, failures.size(), progress.unsupported, progress.elapsed);
  if (stopped) out += "stopped before the campaign's limit (interrupted)\n";
  if (!unavailable.empty()) out += "stopped: " + unavailable + "\n";
  for (const auto& [spec, t] : partitioners) {
    absl::StrAppendFormat(
        &out,
        "  %s: %d case(s): holds %d, failures %d, to investigate %d, unknown %d; accepted %d "
        "(%.1f%%), %.1fs partitioning\n",
        spec, t.cases, t.holds, t.failures, t.investigate, t.unknown, t.accepted,
        t.cases > 0 ? 100.0 * static_cast<double>(t.accepted) / static_cast<double>(t.cases) : 0.0,
        t.seconds);
  }
  for (const CampaignFailure& f : failures) {
    const std::string reduction =
        f.instructions_before == 0
            ? std::string("not reduced")
            : absl::StrFormat("reduced %d -> %d instructions, %d -> %d devices",
                              f.instructions_before, f.instructions_after, f.devices_before,
                              f.devices_after);
    absl::StrAppendFormat(&out,
                          "  %s%s: %d case(s), first at case %d after %.1fs; %s: %s\n    %s\n",
                          f.signature, f.claim ? "" : " (to investigate, not a bug claim)", f.count,
                          f.first_case, f.seconds_to_find, reduction, f.path, f.message);
  }
  if (!unsupported_reasons.empty()) {
    std::vector<std::pair<int64_t, std::string>> top;
    for (const auto& [reason, count] : unsupported_reasons) top.push_back({count, reason});
    std::sort(top.rbegin(), top.rend());
    out += "unsupported (most common):\n";
    for (size_t i = 0; i < top.size() && i < 5; ++i) {
      absl::StrAppendFormat(&out, "  %d x %s\n", top[i].first, top[i].second);
    }
  }
  return out;
}

absl::StatusOr<CampaignReport> RunCampaign(
    const CampaignOptions& options, const std::function<void(const CampaignProgress&)>& progress) {
  if (!options.inject_bug.empty() && !partitioner::IsInjectedBug(options.inject_bug)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown injected bug '", options.inject_bug,
                                                   "' (spmdcheck fuzz --list-bugs)"));
  }
  if (options.seconds <= 0 && options.cases <= 0) {
    return absl::InvalidArgumentError("give --seconds or --cases");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", options.out_dir, ": ", ec.message()));
  }
  ProgramGenOptions gen;
  gen.max_devices = options.max_devices;
  const Clock::time_point start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  std::atomic<int64_t> next_case{0};
  std::atomic<bool> stop{false};
  auto cancelled = [&] { return options.cancel != nullptr && options.cancel->load(); };
  auto stopping = [&] { return stop.load(std::memory_order_relaxed) || cancelled(); };
  std::mutex mu;
  std::condition_variable workers_done;
  int64_t running = 0;     // Workers not yet finished (guarded by mu).
  absl::Status io_status;  // The first repro that could not be written (guarded by mu).
  std::mutex generator_mu;
  CampaignReport report;

  target::TargetOptions target_options = options.target;
  target_options.inject_bug = options.inject_bug;
  {
    // Every spec must make a partitioner before any job starts.
    absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> probe =
        target::MakePartitioners(options.partitioners, target_options);
    if (!probe.ok()) return probe.status();
  }

  auto worker = [&] {
    // One set of partitioners per job: each XLA worker process serves one job.
    absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> partitioners =
        target::MakePartitioners(options.partitioners, target_options);
    if (!partitioners.ok()) return;
    while (!stopping()) {
      const int64_t index = next_case.fetch_add(1);
      if (options.cases > 0 && index >= options.cases) break;
      if (options.seconds > 0 && elapsed() >= options.seconds) break;
      const uint64_t case_seed = CaseSeed(options.seed, index);
      absl::StatusOr<GeneratedProgram> program = absl::InternalError("not generated");
      {
        // The generator drives RapidCheck generators, whose generation context is process-wide:
        // one program at a time.
        std::lock_guard<std::mutex> lock(generator_mu);
        program = ProgramFromBytes(CaseBytes(case_seed, gen), gen);
      }
      if (!program.ok() || program->module == nullptr) {
        std::lock_guard<std::mutex> lock(mu);
        ++report.progress.cases;
        ++report.progress.unsupported;
        ++report.unsupported_reasons["generator error"];
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        ++report.progress.cases;
      }
      for (const auto& partitioner : *partitioners) {
        if (stopping()) break;
        const std::string spec = partitioner->spec();
        CheckOptions check;
        check.trials = 1;
        check.seed = case_seed;
        absl::StatusOr<CheckOutcome> outcome =
            CheckPartitioning(*program->module, *partitioner, check);
        std::unique_lock<std::mutex> lock(mu);
        PartitionerTally& tally = report.partitioners[spec];
        ++tally.cases;
        if (!outcome.ok()) {
          ++tally.unknown;
          ++report.progress.unsupported;
          ++report.unsupported_reasons[FirstLine(
              absl::StrCat(spec, ": ", outcome.status().message()))];
          continue;
        }
        tally.seconds += outcome->self_report.seconds;
        if (outcome->finding == target::Finding::kUnavailable) {
          // Thousands of identical unknowns help nobody: stop and say why.
          if (report.unavailable.empty()) report.unavailable = outcome->message;
          stop = true;
          workers_done.notify_all();
          break;
        }
        if (outcome->partitioned != nullptr) ++tally.accepted;
        bool claim = true;
        const std::string signature = Signature(spec, *outcome, *program->module, &claim);
        if (outcome->status == CheckStatus::kHolds) {
          ++tally.holds;
          ++report.progress.holds;
          continue;
        }
        if (signature.empty()) {
          ++tally.unknown;
          ++report.progress.unsupported;
          ++report.unsupported_reasons[FirstLine(
              spec == "reference" ? outcome->message : absl::StrCat(spec, ": ", outcome->message))];
          continue;
        }
        if (claim) {
          ++tally.failures;
          ++report.progress.failures;
        } else {
          ++tally.investigate;
          ++report.progress.unsupported;
        }
        auto existing =
            std::find_if(report.failures.begin(), report.failures.end(),
                         [&](const CampaignFailure& f) { return f.signature == signature; });
        if (existing != report.failures.end()) {
          ++existing->count;
          continue;
        }
        CampaignFailure failure;
        failure.signature = signature;
        failure.partitioner = spec;
        failure.claim = claim;
        failure.first_case = index;
        failure.case_seed = case_seed;
        failure.count = 1;
        failure.seconds_to_find = elapsed();
        failure.message = outcome->message;
        report.failures.push_back(failure);
        const size_t slot = report.failures.size() - 1;
        lock.unlock();

        // Reduce while the partitioner keeps failing the same way (same signature).
        InterestingnessFn still_fails = [&](const HloModule& m) -> absl::StatusOr<bool> {
          if (stopping()) return absl::CancelledError("campaign stopped");
          absl::StatusOr<CheckOutcome> o = CheckPartitioning(m, *partitioner, check);
          if (!o.ok()) return false;
          bool ignored = true;
          return Signature(spec, *o, m, &ignored) == signature;
        };
        ReduceOptions reduce_options;
        reduce_options.max_seconds = options.reduce_seconds;
        absl::StatusOr<ReduceResult> reduced =
            ReduceModule(*program->module, still_fails, reduce_options);
        const HloModule& repro = reduced.ok() ? *reduced->module : *program->module;
        std::string message = failure.message;
        if (absl::StatusOr<CheckOutcome> o = CheckPartitioning(repro, *partitioner, check);
            o.ok()) {
          message = o->message;
        }
        const std::string path =
            (std::filesystem::path(options.out_dir) / (signature + ".hlo")).string();
        std::string flags = spec == "reference" ? "" : absl::StrCat(" --partitioner ", spec);
        if (!options.inject_bug.empty())
          absl::StrAppend(&flags, " --inject-bug ", options.inject_bug);
        absl::StrAppend(&flags, options.reproduce_flags);
        std::ofstream file(path, std::ios::binary | std::ios::trunc);
        file << "// spmdcheck fuzz repro: " << signature
             << (claim ? "" : " (to investigate: only our oracle sees it)") << "\n"
             << "// found by: spmdcheck fuzz --seed " << options.seed << " --max-devices "
             << options.max_devices << " --partitioner " << options.partitioners
             << (options.inject_bug.empty() ? "" : " --inject-bug " + options.inject_bug)
             << " (case " << index << ", case seed " << case_seed << ")\n"
             << "// reproduce: spmdcheck check " << path << " --seed " << case_seed << " --trials 1"
             << flags << "\n"
             << "// expected vs actual: " << absl::StrReplaceAll(message, {{"\n", " "}}) << "\n";
        if (reduced.ok()) {
          file << "// reduced: " << reduced->report.ToString() << "\n";
        } else {
          file << "// not reduced: " << reduced.status().message() << "\n";
        }
        file << PrintModule(repro);
        file.close();
        const int write_errno = errno;
        lock.lock();
        if (file.fail()) {
          // A finding that is not on disk is lost: stop and report it.
          if (io_status.ok()) {
            io_status = absl::UnavailableError(
                absl::StrCat("cannot write the repro ", path, " for ", signature, ": ",
                             write_errno != 0 ? std::strerror(write_errno) : "write failed"));
          }
          stop = true;
          workers_done.notify_all();
          break;
        }
        CampaignFailure& f = report.failures[slot];
        f.path = path;
        f.message = message;
        if (reduced.ok()) {
          f.instructions_before = reduced->report.entry_instructions_before;
          f.instructions_after = reduced->report.entry_instructions_after;
          f.devices_before = reduced->report.devices_before;
          f.devices_after = reduced->report.devices_after;
        }
      }
    }
  };
  const int64_t jobs = std::max<int64_t>(1, options.jobs);
  std::vector<std::thread> threads;
  running = jobs;
  for (int64_t j = 0; j < jobs; ++j) {
    threads.emplace_back([&] {
      worker();
      std::lock_guard<std::mutex> lock(mu);
      --running;
      workers_done.notify_all();
    });
  }
  // The calling thread reports progress while the workers run, and tells them to stop (a limit
  // reached, `cancel` set) before waiting for them.
  {
    std::unique_lock<std::mutex> lock(mu);
    while (running > 0) {
      workers_done.wait_for(lock, std::chrono::milliseconds(100));
      if (cancelled() || (options.seconds > 0 && elapsed() >= options.seconds)) stop = true;
      report.progress.elapsed = elapsed();
      if (progress && running > 0) progress(report.progress);
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  report.progress.elapsed = elapsed();
  const bool limit_reached = (options.cases > 0 && report.progress.cases >= options.cases) ||
                             (options.seconds > 0 && report.progress.elapsed >= options.seconds);
  if (cancelled() && !limit_reached) report.stopped = true;
  if (!io_status.ok()) return io_status;
  return report;
}

}  // namespace spmdcheck::fuzz
