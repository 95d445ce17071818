// Self-contained HTML pages of `check` and `lint` (one file, nothing fetched): the verdict, the
// collective chain drawn between device groups (each collective a grid of devices coloured by
// its replica group, collective-permutes as arrows), costs before and after, the hint, the
// reproduce line. And `check`'s machine-readable JSON (docs/check.md), which the Python package
// reads.
#ifndef SPMDCHECK_VIZ_REPORT_PAGES_H_
#define SPMDCHECK_VIZ_REPORT_PAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "check/check_pipeline.h"
#include "ir/hlo_module.h"
#include "lint/lint.h"
#include "nlohmann/json.hpp"

namespace spmdcheck::viz {

// The collectives among `instructions` of `module`'s entry computation (all of them when
// empty), in program order, as an SVG fragment (no <svg> wrapper): one row per collective.
std::string CollectiveChainSvg(const HloModule& module, int64_t num_partitions,
                               const std::vector<std::string>& instructions = {});

// One JSON object per partitioner's outcome (schema in docs/check.md): verdict, finding,
// message, first wrong device and element, wrong devices, first divergence, XLA's checks, the
// collective cost of the partitioned module, the reproduce line.
nlohmann::json CheckOutcomeJson(const check::CheckOutcome& outcome, const std::string& path,
                                const std::string& reproduce, int64_t num_partitions);

// The check page: one section per partitioner (Add), then Write.
class CheckPage {
 public:
  explicit CheckPage(std::string module_path) : path_(std::move(module_path)) {}
  void Add(const check::CheckOutcome& outcome, const std::string& reproduce,
           int64_t num_partitions);
  std::string Html() const;
  absl::Status Write(const std::string& file) const;

 private:
  std::string path_;
  std::vector<std::string> sections_;
  std::vector<std::string> summary_rows_;
};

// The lint page: every finding with its chain before (from `module`) and after (the proposed
// HLO), both costs, the hint and the proof.
std::string LintPageHtml(const lint::LintReport& report, const HloModule& module);
absl::Status WriteLintPage(const std::string& file, const lint::LintReport& report,
                           const HloModule& module);

}  // namespace spmdcheck::viz

#endif  // SPMDCHECK_VIZ_REPORT_PAGES_H_
