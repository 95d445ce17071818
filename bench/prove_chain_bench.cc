// `prove chain` on the seed chain of the XLA report (gspmd.hlo, 64 devices), at the shrunk size
// of ../shared/cases/seed-scatter and at the report's real sizes (bf16[8,4,2,64,128]: a 16 KiB
// local shard, a 128 KiB result per device), against a brute-force baseline timed in the same run:
// the same chain evaluated concretely at every device and every local element (EnumerateChain).
// Prints the times and the ratio; exits non-zero when a verdict is not `proved` or the proof at
// the real sizes takes 5 s or more.
//
//   build-smt/bench/prove_chain_bench [SHARED_DIR]
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "bench/seed_case.h"
#include "ir/hlo_parser.h"
#include "smt/chain_prover.h"
#include "tests/shared_dir.h"

namespace {

using spmdcheck::HloModule;
namespace smt = spmdcheck::smt;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<spmdcheck::ParsedModule> parsed = spmdcheck::ParseHloModule(text);
  if (!parsed.ok()) {
    std::fprintf(stderr, "parse error: %s\n", std::string(parsed.status().message()).c_str());
    return nullptr;
  }
  return std::move(parsed->module);
}

// Returns false when something is off.
bool Run(const char* label, const std::string& text, double limit_seconds) {
  std::unique_ptr<HloModule> module = Parse(text);
  if (module == nullptr) return false;
  const auto t0 = std::chrono::steady_clock::now();
  const smt::ProofResult proof = smt::ProveChain(*module, {});
  const auto t1 = std::chrono::steady_clock::now();
  const smt::ChainEnumeration brute = smt::EnumerateChain(*module, {});
  const auto t2 = std::chrono::steady_clock::now();
  const double prove_s = Seconds(t1 - t0);
  const double brute_s = Seconds(t2 - t1);
  std::printf(
      "%-28s prove chain: %-7s %8.3f s | brute force: %-7s %8.3f s over %lld positions | "
      "brute/prove = %.1fx\n",
      label, smt::FormatProofResult(proof).substr(0, 7).c_str(), prove_s,
      smt::FormatProofResult(brute.result).substr(0, 7).c_str(), brute_s,
      static_cast<long long>(brute.positions_checked), brute_s / prove_s);
  bool ok = proof.verdict == spmdcheck::Verdict::kHolds &&
            brute.result.verdict == spmdcheck::Verdict::kHolds;
  if (prove_s >= limit_seconds) {
    std::printf("  over the %.0f s target\n", limit_seconds);
    ok = false;
  }
  if (!ok) std::printf("  %s\n", smt::FormatProofResult(proof).c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  // The shared dir from the command line (must hold the seed case) or the default (skipped
  // when absent).
  if (argc <= 1 && !spmdcheck::test_support::HaveShared("cases/seed-scatter/gspmd.hlo")) {
    std::printf(
        "%s\n",
        spmdcheck::test_support::MissingSharedMessage("cases/seed-scatter/gspmd.hlo").c_str());
    return 0;
  }
  const std::string shared = argc > 1 ? argv[1] : spmdcheck::test_support::SharedDir();
  const std::string shrunk = spmdcheck::bench::ReadSeedChain(shared);
  if (shrunk.empty()) {
    std::fprintf(stderr, "cannot read %s/cases/seed-scatter/gspmd.hlo\n", shared.c_str());
    return 2;
  }
  const std::string real = spmdcheck::bench::AtReportSizes(shrunk);
  bool ok = Run("seed, shrunk (64 devices)", shrunk, 5.0);
  ok = Run("seed, real sizes (64 dev.)", real, 5.0) && ok;
  return ok ? 0 : 1;
}
