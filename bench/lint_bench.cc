// `spmdcheck lint` on the seed chain of the XLA report (gspmd.hlo, 64 devices), at the shrunk size
// of ../shared/cases/seed-scatter and at the report's real sizes (bf16[8,4,2,64,128]: a 16 KiB
// local shard, a 128 KiB result per device). Prints the time, the finding and the byte ratio
// against GSPMD's chain (the report: 168 KiB now, 128 KiB the floor, so at most 0.81 wanted);
// exits non-zero when the finding is not proved or not below that ratio.
//
//   build/bench/lint_bench [SHARED_DIR]
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "bench/seed_case.h"
#include "ir/hlo_parser.h"
#include "lint/lint.h"
#include "tests/shared_dir.h"

namespace {

namespace lint = spmdcheck::lint;

bool Run(const char* label, const std::string& text) {
  absl::StatusOr<spmdcheck::ParsedModule> parsed = spmdcheck::ParseHloModule(text);
  if (!parsed.ok()) {
    std::fprintf(stderr, "parse error: %s\n", std::string(parsed.status().message()).c_str());
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<lint::LintReport> report = lint::LintModule(*parsed->module, text, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!report.ok() || report->findings.size() != 1) {
    std::printf("%-28s no single finding\n", label);
    return false;
  }
  const lint::Finding& f = report->findings[0];
  const double ratio = static_cast<double>(f.proposed.flat.max_recv_bytes) /
                       static_cast<double>(f.current.flat.max_recv_bytes);
  std::printf(
      "%-28s %6.2f s  %s  %lld collectives (%lld permutes) -> %lld (%lld); max recv %lld -> %lld "
      "B per device (%.3f)\n",
      label, seconds, std::string(lint::FindingStatusName(f.status)).c_str(),
      static_cast<long long>(f.current.flat.collectives),
      static_cast<long long>(f.current.flat.collective_permutes),
      static_cast<long long>(f.proposed.flat.collectives),
      static_cast<long long>(f.proposed.flat.collective_permutes),
      static_cast<long long>(f.current.flat.max_recv_bytes),
      static_cast<long long>(f.proposed.flat.max_recv_bytes), ratio);
  return f.status == lint::FindingStatus::kProved && ratio <= 0.81;
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
  bool ok = Run("seed, shrunk (64 devices)", shrunk);
  ok = Run("seed, real sizes (64 dev.)", real) && ok;
  return ok ? 0 : 1;
}
