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

// The opcode of the global instruction a failure points at.
std::string Signature(const CheckOutcome& outcome, const HloModule& program) {
  const std::string kind = outcome.status == CheckStatus::kCrash ? "crash" : "wrong-result";
  std::string where = "root";
  if (outcome.status == CheckStatus::kFails && outcome.report.first_divergence.has_value()) {
    const std::string& holds = outcome.report.first_divergence->holds;
    for (const auto& c : program.computations()) {
      if (HloInstruction* i = c->FindInstruction(holds)) {
        where = std::string(HloOpcodeString(i->opcode()));
        break;
      }
    }
  } else if (outcome.status == CheckStatus::kFails) {
    where = std::string(HloOpcodeString(program.entry()->root()->opcode()));
  } else {
    // Crash messages start with the instruction name; keep the first word's opcode-like part.
    const std::string& m = outcome.message;
    where = m.substr(0, std::min<size_t>(m.find_first_of(" :("), 24));
    for (const auto& c : program.computations()) {
      if (HloInstruction* i = c->FindInstruction(where)) {
        where = std::string(HloOpcodeString(i->opcode()));
        break;
      }
    }
  }
  std::string signature = absl::StrCat(kind, ".", where);
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
  for (const CampaignFailure& f : failures) {
    const std::string reduction =
        f.instructions_before == 0
            ? std::string("not reduced")
            : absl::StrFormat("reduced %d -> %d instructions, %d -> %d devices",
                              f.instructions_before, f.instructions_after, f.devices_before,
                              f.devices_after);
    absl::StrAppendFormat(&out, "  %s: %d case(s), first at case %d after %.1fs; %s: %s\n    %s\n",
                          f.signature, f.count, f.first_case, f.seconds_to_find, reduction, f.path,
                          f.message);
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

  auto worker = [&] {
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
      CheckOptions check;
      check.trials = 1;
      check.seed = case_seed;
      check.inject_bug = options.inject_bug;
      absl::StatusOr<CheckOutcome> outcome = CheckPartitioning(*program->module, check);
      std::unique_lock<std::mutex> lock(mu);
      ++report.progress.cases;
      if (!outcome.ok()) {
        ++report.progress.unsupported;
        ++report.unsupported_reasons[FirstLine(std::string(outcome.status().message()))];
        continue;
      }
      if (outcome->status == CheckStatus::kHolds) {
        ++report.progress.holds;
        continue;
      }
      if (outcome->status == CheckStatus::kUnsupported) {
        ++report.progress.unsupported;
        ++report.unsupported_reasons[FirstLine(outcome->message)];
        continue;
      }
      ++report.progress.failures;
      const std::string signature = Signature(*outcome, *program->module);
      auto existing =
          std::find_if(report.failures.begin(), report.failures.end(),
                       [&](const CampaignFailure& f) { return f.signature == signature; });
      if (existing != report.failures.end()) {
        ++existing->count;
        continue;
      }
      CampaignFailure failure;
      failure.signature = signature;
      failure.first_case = index;
      failure.case_seed = case_seed;
      failure.count = 1;
      failure.seconds_to_find = elapsed();
      failure.message = outcome->message;
      report.failures.push_back(failure);
      const size_t slot = report.failures.size() - 1;
      lock.unlock();

      // Reduce while the same kind of failure keeps happening.
      const CheckStatus kind = outcome->status;
      InterestingnessFn still_fails = [&](const HloModule& m) -> absl::StatusOr<bool> {
        if (stopping()) return absl::CancelledError("campaign stopped");
        CheckOptions again = check;
        absl::StatusOr<CheckOutcome> o = CheckPartitioning(m, again);
        if (!o.ok()) return false;
        return o->status == kind;
      };
      ReduceOptions reduce_options;
      reduce_options.max_seconds = options.reduce_seconds;
      absl::StatusOr<ReduceResult> reduced =
          ReduceModule(*program->module, still_fails, reduce_options);
      const HloModule& repro = reduced.ok() ? *reduced->module : *program->module;
      std::string message = failure.message;
      if (absl::StatusOr<CheckOutcome> o = CheckPartitioning(repro, check); o.ok()) {
        message = o->message;
      }
      const std::string path =
          (std::filesystem::path(options.out_dir) / (signature + ".hlo")).string();
      std::string bug_flag =
          options.inject_bug.empty() ? "" : absl::StrCat(" --inject-bug ", options.inject_bug);
      std::ofstream file(path, std::ios::binary | std::ios::trunc);
      file << "// spmdcheck fuzz repro: " << signature << "\n"
           << "// found by: spmdcheck fuzz --seed " << options.seed << " --max-devices "
           << options.max_devices << bug_flag << " (case " << index << ", case seed " << case_seed
           << ")\n"
           << "// reproduce: spmdcheck check " << path << " --seed " << case_seed << " --trials 1"
           << bug_flag << "\n"
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
