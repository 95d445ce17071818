// The reports of a night, for people and CI dashboards: report.json (schema
// spmdcheck-nightly-report/1, docs/nightly.md) is built first from the state; report.md,
// report.html (the findings table, new vs known, and inline-SVG trend plots over the nights) and
// junit.xml (a test case per signature, new findings fail; one per target) are rendered from it.
#ifndef SPMDCHECK_NIGHTLY_REPORT_H_
#define SPMDCHECK_NIGHTLY_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nightly/state.h"
#include "nlohmann/json.hpp"

namespace spmdcheck::nightly {

// `nights`: every night of the directory in order (the trends); `night`: the one reported.
nlohmann::json BuildReport(const std::vector<NightRecord>& nights, const FindingsDb& db,
                           const std::string& night, int exit_code);
std::string ReportMarkdown(const nlohmann::json& report);
std::string ReportHtml(const nlohmann::json& report);
std::string ReportJunit(const nlohmann::json& report);
// DIR/report.json, report.md, report.html, junit.xml, each written atomically.
absl::Status WriteReports(const std::string& dir, const nlohmann::json& report);

}  // namespace spmdcheck::nightly

#endif  // SPMDCHECK_NIGHTLY_REPORT_H_
