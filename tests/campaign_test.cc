#include "fuzz/campaign.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spmdcheck::fuzz {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("spmdcheck_campaign_test_" + name + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(Campaign, CancelStopsALongCampaignWithTheReportSoFar) {
  std::atomic<bool> cancel{false};
  CampaignOptions options;
  options.seconds = 3600;
  options.seed = 11;
  options.jobs = 2;
  options.out_dir = TempDir("cancel");
  options.cancel = &cancel;
  int64_t cases_seen = 0;
  absl::StatusOr<CampaignReport> report = RunCampaign(options, [&](const CampaignProgress& p) {
    cases_seen = p.cases;
    // Stop once some cases have run (the campaign's own limit is an hour away).
    if (p.cases >= 5 && !cancel.load()) cancel.store(true);
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->stopped);
  EXPECT_GE(report->progress.cases, 5);
  EXPECT_GE(report->progress.cases, cases_seen);
  // A case takes milliseconds: stopping must not wait for anything like the hour.
  EXPECT_LT(report->progress.elapsed, 120);
  EXPECT_THAT(report->ToString(), HasSubstr("stopped before the campaign's limit"));
  std::filesystem::remove_all(options.out_dir);
}

TEST(Campaign, CancelledBeforeTheStartRunsAtMostOneCasePerJob) {
  std::atomic<bool> cancel{true};
  CampaignOptions options;
  options.seconds = 0;
  options.cases = 100000;
  options.jobs = 2;
  options.out_dir = TempDir("precancel");
  options.cancel = &cancel;
  absl::StatusOr<CampaignReport> report = RunCampaign(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->stopped);
  EXPECT_LE(report->progress.cases, 2);
  std::filesystem::remove_all(options.out_dir);
}

TEST(Campaign, ReachingTheCaseLimitIsNotAStop) {
  CampaignOptions options;
  options.seconds = 0;
  options.cases = 20;
  options.seed = 3;
  options.out_dir = TempDir("limit");
  absl::StatusOr<CampaignReport> report = RunCampaign(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->stopped);
  EXPECT_EQ(report->progress.cases, 20);
  std::filesystem::remove_all(options.out_dir);
}

// A repro that cannot be written (its path is a full device) fails the campaign, naming it.
TEST(Campaign, AFailedReproWriteIsAnError) {
  CampaignOptions options;
  options.seconds = 0;
  options.cases = 60;
  options.seed = 3;
  options.inject_bug = "dot-padding-unmasked";
  options.out_dir = TempDir("found");
  absl::StatusOr<CampaignReport> found = RunCampaign(options);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_FALSE(found->failures.empty()) << "the injected bug is expected within 60 cases";
  const std::string signature = found->failures.front().signature;
  const std::filesystem::path folder = found->failures.front().path;
  EXPECT_TRUE(std::filesystem::is_regular_file(folder / "module.hlo"));
  EXPECT_TRUE(std::filesystem::is_regular_file(folder / "finding.json"));
  EXPECT_TRUE(std::filesystem::is_regular_file(folder / "inputs.txt"));
  EXPECT_TRUE(std::filesystem::is_regular_file(folder / "partitioned.hlo"));
  EXPECT_TRUE(std::filesystem::is_regular_file(folder / "repro.py"));
  EXPECT_TRUE(
      std::filesystem::is_regular_file(std::filesystem::path(options.out_dir) / "summary.json"));
  std::filesystem::remove_all(options.out_dir);

  options.out_dir = TempDir("full");
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(options.out_dir) / signature, ec);
  ASSERT_FALSE(ec) << ec.message();
  std::filesystem::create_symlink(
      "/dev/full", std::filesystem::path(options.out_dir) / signature / "module.hlo", ec);
  ASSERT_FALSE(ec) << ec.message();
  absl::StatusOr<CampaignReport> failed = RunCampaign(options);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("cannot write the repro"));
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr(signature));
  std::filesystem::remove_all(options.out_dir);
}

}  // namespace
}  // namespace spmdcheck::fuzz
