// The nightly job's state (atomic files, night records, the findings database), its reading of
// libFuzzer's output, and its reports (JSON, Markdown, HTML, JUnit).
#include <chrono>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nightly/libfuzzer.h"
#include "nightly/report.h"
#include "nightly/runner.h"
#include "nightly/state.h"
#include "tests/test_files.h"

namespace spmdcheck::nightly {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("spmdcheck_nightly_test_" + name + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(AtomicFile, WritesReplacesAndLeavesNoTemporaryFile) {
  const std::string dir = TempDir("atomic");
  const std::string path = dir + "/sub/state.json";
  ASSERT_TRUE(base::WriteFileAtomic(path, "{\"a\": 1}\n").ok());
  ASSERT_TRUE(base::WriteFileAtomic(path, "{\"a\": 2}\n").ok());
  EXPECT_EQ(test_support::ReadFileOrFail(path), "{\"a\": 2}\n");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/sub")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(path);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ((*json)["a"], 2);
}

TEST(AtomicFile, ReadErrorsSayWhat) {
  const std::string dir = TempDir("read");
  EXPECT_TRUE(absl::IsNotFound(ReadJsonFile(dir + "/absent.json").status()));
  test_support::WriteFileOrFail(dir + "/bad.json", "{\"truncated\": ");
  absl::Status status = ReadJsonFile(dir + "/bad.json").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(std::string(status.message()), HasSubstr("bad.json"));
  // A write into a path that cannot be a directory fails with the path named.
  test_support::WriteFileOrFail(dir + "/file", "x");
  status = base::WriteFileAtomic(dir + "/file/inside.json", "{}");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("file/inside.json"));
}

TEST(NightIds, DatesWithCountersAndValidNames) {
  EXPECT_EQ(NewNightId("2026-12-02", {}), "2026-12-02");
  EXPECT_EQ(NewNightId("2026-12-02", {"2026-12-01", "2026-12-02"}), "2026-12-02.2");
  EXPECT_EQ(NewNightId("2026-12-02", {"2026-12-02", "2026-12-02.2"}), "2026-12-02.3");
  EXPECT_TRUE(ValidNightName("n1"));
  EXPECT_TRUE(ValidNightName("2026-12-02.2"));
  EXPECT_FALSE(ValidNightName(""));
  EXPECT_FALSE(ValidNightName("../x"));
  EXPECT_FALSE(ValidNightName(".hidden"));
  EXPECT_FALSE(ValidNightName("a b"));
  // Seeds: a function of the id (a night can be rerun), different ids differ, libFuzzer-sized.
  EXPECT_EQ(SeedForNight("2026-12-02"), SeedForNight("2026-12-02"));
  EXPECT_NE(SeedForNight("2026-12-02"), SeedForNight("2026-12-03"));
  EXPECT_LE(SeedForNight("2026-12-02"), 0x7fffffffu);
  EXPECT_EQ(SeedForAttempt(42, 1), 42u);
  EXPECT_NE(SeedForAttempt(42, 2), 42u);
}

TEST(NightRecordTest, RoundTripsThroughTheStateDirectory) {
  StateDir state(TempDir("night"));
  NightRecord night;
  night.id = "n1";
  night.seed = 77;
  night.budget_seconds = 12.5;
  night.canary_bug = "dot-padding-unmasked";
  night.canary_signature = "wrong-result.dot";
  TargetRun t;
  t.name = "reference";
  t.kind = "campaign";
  t.partitioner = "reference";
  t.status = "done";
  t.spent_seconds = 4.25;
  t.cases = 300;
  t.cases_per_second = 75;
  t.acceptance_rate = 1;
  t.signatures = {"wrong-result.dot"};
  night.targets.push_back(t);
  ASSERT_TRUE(state.SaveNight(night).ok());
  ASSERT_TRUE(state.SaveNights({"n1"}).ok());
  absl::StatusOr<NightRecord> loaded = state.LoadNight("n1");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->seed, 77u);
  EXPECT_EQ(loaded->budget_seconds, 12.5);
  ASSERT_EQ(loaded->targets.size(), 1u);
  EXPECT_EQ(loaded->targets[0].cases, 300);
  EXPECT_EQ(loaded->targets[0].signatures, std::vector<std::string>{"wrong-result.dot"});
  EXPECT_EQ(loaded->SpentSeconds(), 4.25);
  absl::StatusOr<std::vector<std::string>> nights = state.LoadNights();
  ASSERT_TRUE(nights.ok());
  EXPECT_THAT(*nights, ElementsAre("n1"));
}

Observation Seen(const std::string& signature, const std::string& target, int64_t count,
                 bool claim = true) {
  Observation o;
  o.signature = signature;
  o.target = target;
  o.count = count;
  o.bug_claim = claim;
  o.folder = StateDir::KeptFindingFolder(signature);
  return o;
}

TEST(FindingsDbTest, DeduplicatesAcrossTargetsAndNightsAndTracksFirstAndLast) {
  FindingsDb db;
  const std::vector<std::string> order = {"n1", "n2", "n3"};
  db.RecordNight("n1", order,
                 {Seen("crash.dot", "reference", 3), Seen("xla.timeout", "xla", 1, false)});
  db.RecordNight("n2", order,
                 {Seen("crash.dot", "reference", 2), Seen("crash.dot", "shardy", 1),
                  Seen("libfuzzer.fuzz_reshard.SEGV.0badf00d", "libfuzzer.fuzz_reshard", 1)});
  ASSERT_EQ(db.entries().size(), 3u);
  const FindingEntry& dot = db.entries().at("crash.dot");
  EXPECT_EQ(dot.first_night, "n1");
  EXPECT_EQ(dot.last_night, "n2");
  EXPECT_EQ(dot.nights_seen(), 2);
  EXPECT_EQ(dot.count(), 6);
  EXPECT_THAT(dot.targets, ElementsAre("reference", "shardy"));
  EXPECT_FALSE(dot.NewIn("n2"));
  EXPECT_TRUE(dot.NewIn("n1"));
  EXPECT_TRUE(db.entries().at("libfuzzer.fuzz_reshard.SEGV.0badf00d").NewIn("n2"));
  EXPECT_EQ(db.entries().at("xla.timeout").last_night, "n1");
  // Recording a night again (a resume re-reads what is on disk) changes nothing...
  db.RecordNight("n2", order,
                 {Seen("crash.dot", "reference", 2), Seen("crash.dot", "shardy", 1),
                  Seen("libfuzzer.fuzz_reshard.SEGV.0badf00d", "libfuzzer.fuzz_reshard", 1)});
  EXPECT_EQ(db.entries().at("crash.dot").count(), 6);
  // ... but what it saw since.
  db.RecordNight("n2", order,
                 {Seen("crash.dot", "reference", 5), Seen("crash.dot", "shardy", 1),
                  Seen("libfuzzer.fuzz_reshard.SEGV.0badf00d", "libfuzzer.fuzz_reshard", 1)});
  EXPECT_EQ(db.entries().at("crash.dot").count(), 9);
  // A known finding of corpus/xla-findings is never new.
  Observation known = Seen("xla.miscompile.pad", "xla", 1);
  known.known_as = "pad-interior-window-clamped";
  db.RecordNight("n3", order, {known});
  EXPECT_FALSE(db.entries().at("xla.miscompile.pad").NewIn("n3"));
  // Through JSON and back.
  absl::StatusOr<FindingsDb> again = FindingsDb::FromJson(db.ToJson());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->entries().at("crash.dot").count(), 9);
  EXPECT_EQ(again->entries().at("crash.dot").first_night, "n1");
  EXPECT_EQ(again->entries().at("xla.miscompile.pad").known_as, "pad-interior-window-clamped");
  EXPECT_FALSE(FindingsDb::FromJson({{"schema", "other"}}).ok());
}

TEST(LibFuzzerLog, StatusLinesOfNormalAndForkMode) {
  LibFuzzerStats normal = ParseLibFuzzerStats(
      "INFO: Seed: 1\n#2\tINITED cov: 120 ft: 150 corp: 1/1b exec/s: 0 rss: 30Mb\n"
      "#1024\tpulse  cov: 300 ft: 410 corp: 25/300b lim: 4 exec/s: 512 rss: 40Mb\n"
      "#2048\tNEW    cov: 310 ft: 420 corp: 26/310b lim: 4 exec/s: 1024 rss: 40Mb L: 3/4\n"
      "Done 2048 runs in 2 second(s)\nstat::number_of_executed_units: 2051\n"
      "stat::average_exec_per_sec:     1025\n");
  EXPECT_EQ(normal.coverage, 310);
  EXPECT_EQ(normal.features, 420);
  EXPECT_EQ(normal.corpus, 26);
  EXPECT_EQ(normal.execs, 2051);
  EXPECT_EQ(normal.execs_per_second, 1025);
  LibFuzzerStats fork = ParseLibFuzzerStats(
      "INFO: -fork=1: fuzzing in separate process(s)\n"
      "#8000: cov: 700 ft: 900 corp: 80 exec/s 4000 oom/timeout/crash: 0/0/1 time: 2s job: 1 "
      "dft_time: 0\n#16000: cov: 720 ft: 950 corp: 85 exec/s 4000 oom/timeout/crash: 0/0/1 "
      "time: 4s job: 2 dft_time: 0\n");
  EXPECT_EQ(fork.coverage, 720);
  EXPECT_EQ(fork.features, 950);
  EXPECT_EQ(fork.corpus, 85);
  EXPECT_EQ(fork.execs, 16000);
  EXPECT_EQ(fork.execs_per_second, 4000);
  EXPECT_EQ(ParseLibFuzzerStats("nothing here\n").coverage, -1);
}

constexpr char kAsanLog[] = R"(INFO: Running with entropic power schedule (0xFF, 100).
=================================================================
==12==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011 at pc 0x1 bp 0x2
READ of size 1 at 0x602000000011 thread T0
    #0 0x55d0c1 in spmdcheck::ParseToken(std::basic_string_view<char>) /src/ir/lexer.cc:12:3
    #1 0x55d0c2 in spmdcheck::ParseSharding(std::basic_string_view<char>) /src/ir/sharding.cc:40:5
    #2 0x55d0c3 in LLVMFuzzerTestOneInput /src/fuzz/targets/fuzz_sharding_parser.cc:20:3
    #3 0x55d0c4 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) (/b/fuzz+0x1)
    #4 0x55d0c5 in main (/b/fuzz+0x2)

0x602000000011 is located 0 bytes after 1-byte region
allocated by thread T0 here:
    #0 0x55d0d1 in malloc (/b/fuzz+0x3)
    #1 0x55d0d2 in spmdcheck::Other() /src/ir/other.cc:1:1
SUMMARY: AddressSanitizer: heap-buffer-overflow /src/ir/lexer.cc:12:3 in spmdcheck::ParseToken
)";

TEST(LibFuzzerLog, CrashKindAndTopFramesMakeTheSignature) {
  CrashInfo crash = ParseCrash(kAsanLog);
  EXPECT_EQ(crash.kind, "heap-buffer-overflow");
  EXPECT_THAT(crash.frames, ElementsAre("spmdcheck::ParseToken(std::basic_string_view<char>)",
                                        "spmdcheck::ParseSharding(std::basic_string_view<char>)",
                                        "LLVMFuzzerTestOneInput"));
  EXPECT_EQ(crash.hash.size(), 8u);
  const std::string signature = LibFuzzerSignature("fuzz_sharding_parser", crash);
  EXPECT_EQ(signature, "libfuzzer.fuzz_sharding_parser.heap-buffer-overflow." + crash.hash);
  // The same stack at other addresses (another build, ASLR) is the same finding.
  std::string moved = kAsanLog;
  for (size_t at = moved.find("0x55d0c"); at != std::string::npos; at = moved.find("0x55d0c")) {
    moved.replace(at, 7, "0x7f00a");
  }
  EXPECT_EQ(ParseCrash(moved).hash, crash.hash);
  // Another innermost function is another finding.
  std::string other = kAsanLog;
  other.replace(other.find("ParseToken(std"), 10, "ParseShape");
  EXPECT_NE(ParseCrash(other).hash, crash.hash);
}

TEST(LibFuzzerLog, OtherKinds) {
  EXPECT_EQ(ParseCrash("==1==ERROR: LeakSanitizer: detected memory leaks\n").kind, "leak");
  EXPECT_EQ(ParseCrash("==1== ERROR: libFuzzer: timeout after 10 seconds\n").kind, "timeout");
  EXPECT_EQ(ParseCrash("==1== ERROR: libFuzzer: out-of-memory (used: 2100Mb)\n").kind, "oom");
  EXPECT_EQ(ParseCrash("/src/a.cc:3:4: runtime error: signed integer overflow\n").kind, "ubsan");
  CrashInfo invariant = ParseCrash(
      "FUZZ INVARIANT BROKEN: print/reparse/print differs\n==1== ERROR: libFuzzer: deadly "
      "signal\n    #0 0x1 in abort (/lib/libc.so+0x1)\n    #1 0x2 in "
      "spmdcheck::fuzz_targets::FuzzFail(char const*) /src/fuzz_common.h:18:3\n");
  EXPECT_EQ(invariant.kind, "invariant");
  EXPECT_THAT(invariant.frames, ElementsAre("spmdcheck::fuzz_targets::FuzzFail(char const*)"));
  EXPECT_FALSE(invariant.hash.empty());
  EXPECT_EQ(ParseCrash("garbage\n").kind, "crash");
  EXPECT_EQ(ParseCrash("garbage\n").hash, "");
  EXPECT_EQ(ArtifactKind("crash-da39a3ee"), "crash");
  EXPECT_EQ(ArtifactKind("leak-1"), "leak");
  EXPECT_EQ(ArtifactKind("slow-unit-1"), "slow-unit");
  EXPECT_EQ(ArtifactKind("input"), "");
}

TEST(LibFuzzerFlags, FromTheOptionsFileElseTheSmokeRunsTable) {
  const std::string src = TempDir("options");
  std::filesystem::create_directories(src + "/fuzz/targets");
  test_support::WriteFileOrFail(
      src + "/fuzz/targets/fuzz_hlo_parser.options",
      "[libfuzzer]\nmax_len = 99\n# a comment\ntimeout = 7\n[other]\nmax_len = 1\n");
  EXPECT_THAT(LibFuzzerTargetFlags("fuzz_hlo_parser", src),
              ElementsAre("-max_len=99", "-timeout=7", "-dict=" + src + "/fuzz/targets/hlo.dict"));
  EXPECT_THAT(LibFuzzerTargetFlags("fuzz_partition", src),
              ElementsAre("-max_len=652", "-timeout=60", "-rss_limit_mb=2048", "-entropic=0"));
}

// Two nights: a finding of night 1 seen again in night 2 (known) and one new in night 2.
struct TwoNights {
  std::vector<NightRecord> nights;
  FindingsDb db;
};

TwoNights MakeTwoNights(bool canary_found) {
  TwoNights t;
  for (const std::string id : {"n1", "n2"}) {
    NightRecord night;
    night.id = id;
    night.seed = id == "n1" ? 11 : 12;
    night.status = "complete";
    night.budget_seconds = 20;
    night.canary_bug = "dot-padding-unmasked";
    night.canary_signature = "wrong-result.dot";
    TargetRun canary;
    canary.name = "canary";
    canary.kind = "canary";
    canary.status = "done";
    canary.spent_seconds = 3;
    if (canary_found || id == "n1") canary.signatures = {"wrong-result.dot"};
    TargetRun reference;
    reference.name = "reference";
    reference.kind = "campaign";
    reference.status = "done";
    reference.spent_seconds = 10;
    reference.cases = id == "n1" ? 1000 : 1200;
    reference.cases_per_second = id == "n1" ? 100 : 120;
    reference.acceptance_rate = 1;
    TargetRun lf;
    lf.name = "libfuzzer.fuzz_reshard";
    lf.kind = "libfuzzer";
    lf.partitioner = "fuzz_reshard";
    if (id == "n1") {
      lf.status = "unknown";
      lf.reason = "not built: no build-fuzz/fuzz/fuzz_reshard";
    } else {
      lf.status = "done";
      lf.coverage = 900;
      lf.features = 1500;
      lf.execs_per_second = 2500;
    }
    night.targets = {canary, reference, lf};
    t.nights.push_back(night);
  }
  t.db.RecordNight("n1", {"n1", "n2"}, {Seen("crash.reshape", "reference", 4)});
  t.db.RecordNight("n2", {"n1", "n2"},
                   {Seen("crash.reshape", "reference", 2),
                    Seen("libfuzzer.fuzz_reshard.SEGV.12345678", "libfuzzer.fuzz_reshard", 1)});
  if (!canary_found) t.nights[1].status = "broken";
  return t;
}

TEST(Report, JsonSaysNewVersusKnownAndCarriesTheTrends) {
  TwoNights t = MakeTwoNights(/*canary_found=*/true);
  nlohmann::json report = BuildReport(t.nights, t.db, "n2", 1);
  EXPECT_EQ(report["schema"], "spmdcheck-nightly-report/1");
  EXPECT_EQ(report["night"]["id"], "n2");
  EXPECT_EQ(report["night"]["canary"]["found"], true);
  EXPECT_EQ(report["summary"]["new"], 1);
  EXPECT_EQ(report["summary"]["known"], 1);
  ASSERT_EQ(report["findings"].size(), 2u);
  EXPECT_EQ(report["findings"][0]["signature"], "libfuzzer.fuzz_reshard.SEGV.12345678");
  EXPECT_EQ(report["findings"][0]["status"], "new");
  EXPECT_EQ(report["findings"][1]["signature"], "crash.reshape");
  EXPECT_EQ(report["findings"][1]["status"], "known");
  EXPECT_EQ(report["findings"][1]["first_night"], "n1");
  EXPECT_EQ(report["findings"][1]["count"], 6);
  EXPECT_EQ(report["findings"][1]["count_tonight"], 2);
  ASSERT_EQ(report["trends"].size(), 2u);
  EXPECT_EQ(report["trends"][0]["cases_per_second"]["reference"], 100.0);
  EXPECT_EQ(report["trends"][1]["cases_per_second"]["reference"], 120.0);
  EXPECT_FALSE(report["trends"][0]["coverage"].contains("fuzz_reshard"));
  EXPECT_EQ(report["trends"][1]["coverage"]["fuzz_reshard"], 900);
  EXPECT_EQ(report["trends"][0]["findings"]["crash.reshape"], 4);
  // Reporting night 1 shows it as it was: its finding new, no later trend.
  nlohmann::json first = BuildReport(t.nights, t.db, "n1", 1);
  EXPECT_EQ(first["trends"].size(), 1u);
  EXPECT_EQ(first["findings"][0]["signature"], "crash.reshape");
  EXPECT_EQ(first["findings"][0]["status"], "new");
}

TEST(Report, JunitHasATestCasePerSignatureAndNewOnesFail) {
  TwoNights t = MakeTwoNights(/*canary_found=*/false);
  const std::string xml = ReportJunit(BuildReport(t.nights, t.db, "n2", 1));
  EXPECT_THAT(xml, HasSubstr("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
  EXPECT_THAT(xml, HasSubstr("name=\"crash.reshape\""));
  EXPECT_THAT(xml, HasSubstr("name=\"libfuzzer.fuzz_reshard.SEGV.12345678\""));
  // One new finding and the broken canary fail.
  EXPECT_EQ(Occurrences(xml, "<failure "), 2);
  EXPECT_THAT(xml, HasSubstr("type=\"new-finding\" message=\"new finding "
                             "libfuzzer.fuzz_reshard.SEGV.12345678"));
  EXPECT_THAT(xml, HasSubstr("type=\"broken-night\""));
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"spmdcheck nightly n2\" tests=\"5\" "
                             "failures=\"2\" errors=\"0\" skipped=\"0\">"));
  // Night 1: libFuzzer was not built: skipped, not passed.
  const std::string first = ReportJunit(BuildReport(t.nights, t.db, "n1", 3));
  EXPECT_THAT(first, HasSubstr("<skipped message=\"unknown: not built"));
  // Control characters do not make it into the XML.
  t.db.RecordNight("n2", {"n1", "n2"}, {Seen("odd", "reference", 1)});
  nlohmann::json report = BuildReport(t.nights, t.db, "n2", 1);
  report["findings"][0]["message"] = std::string("a\x1b[31mb<c>");
  EXPECT_THAT(ReportJunit(report), HasSubstr("a[31mb&lt;c&gt;"));
}

TEST(Report, HtmlAndMarkdownShowTheTableAndThePlots) {
  TwoNights t = MakeTwoNights(/*canary_found=*/true);
  nlohmann::json report = BuildReport(t.nights, t.db, "n2", 1);
  const std::string html = ReportHtml(report);
  EXPECT_THAT(html, HasSubstr("<table id=\"findings\">"));
  EXPECT_THAT(html, HasSubstr("data-signature=\"crash.reshape\" data-status=\"known\""));
  EXPECT_THAT(html, HasSubstr("data-signature=\"libfuzzer.fuzz_reshard.SEGV.12345678\" "
                              "data-status=\"new\""));
  EXPECT_EQ(Occurrences(html, "<svg class=\"trend\""), 4);
  EXPECT_THAT(html, HasSubstr("data-metric=\"cases_per_second\""));
  EXPECT_THAT(html, HasSubstr("data-series=\"reference\""));
  EXPECT_THAT(html, HasSubstr("data-night=\"n2\" data-value=\"120\""));
  EXPECT_THAT(html, HasSubstr("data-metric=\"acceptance_rate\""));
  EXPECT_THAT(html, HasSubstr("data-night=\"n1\" data-value=\"100\""));  // 100% accepted
  const std::string md = ReportMarkdown(report);
  EXPECT_THAT(md, HasSubstr("# spmdcheck nightly: n2"));
  EXPECT_THAT(md, HasSubstr("| `libfuzzer.fuzz_reshard.SEGV.12345678` | **new** |"));
  EXPECT_THAT(md, HasSubstr("| `crash.reshape` | known |"));
  EXPECT_THAT(md, HasSubstr("Canary: injected bug `dot-padding-unmasked`, expected "
                            "`wrong-result.dot`: **found**."));
  // The files.
  const std::string dir = TempDir("reports");
  ASSERT_TRUE(WriteReports(dir, report).ok());
  for (const char* name : {"report.json", "report.md", "report.html", "junit.xml"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + name)) << name;
  }
  EXPECT_EQ(ReadJsonFile(dir + "/report.json")->at("summary")["new"], 1);
}

TEST(NightlyResultTest, ExitCodes) {
  NightlyResult r;
  EXPECT_EQ(r.ExitCode(), 0);
  r.unknown_targets = 1;
  EXPECT_EQ(r.ExitCode(), 3);
  r.new_bug_claims = 1;
  EXPECT_EQ(r.ExitCode(), 1);
  NightlyResult broken;
  broken.broken = true;
  EXPECT_EQ(broken.ExitCode(), 3);
  EXPECT_EQ(CanarySignatureFor("dot-padding-unmasked"), "wrong-result.all-reduce");
  EXPECT_EQ(CanarySignatureFor("something-else"), "");
}

}  // namespace
}  // namespace spmdcheck::nightly
