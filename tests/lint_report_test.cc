// Tests of the lint report renderings (lint/report.cc): the JSON parses (python3's json module)
// and re-serialises to exactly the same text, so key order, layout and escaping are as
// documented; the SARIF validates against the official OASIS SARIF 2.1.0 schema
// (tests/data/sarif-schema-2.1.0.json, checked by tests/validate_json_schema.py with python3's
// jsonschema module); the text report carries every part of a finding.
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "analysis/cost_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lint/lint.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

using analysis::CollectiveCost;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSarifSchema =
    ::spmdcheck::test_support::SourcePath("tests/data/sarif-schema-2.1.0.json");
const std::string kValidator =
    ::spmdcheck::test_support::SourcePath("tests/validate_json_schema.py");

// Strings that JSON must escape.
constexpr char kTrickyMessage[] =
    "replace \"all-gather + dynamic-slice\" by all-to-all\nsecond line: C:\\path\\x";
constexpr char kTrickyPath[] = "models/llama \"7b\".hlo";

CollectiveCost Cost(int64_t collectives, int64_t permutes, int64_t recv, int64_t send) {
  CollectiveCost cost;
  cost.collectives = collectives;
  cost.collective_permutes = permutes;
  cost.max_recv_bytes = recv;
  cost.max_send_bytes = send;
  return cost;
}

// A proved search finding with a cause and topology costs, an unproven one without a location, an
// incorrect chain and a proved pattern finding backed by a catalog rule.
LintReport MakeReport() {
  LintReport report;
  report.path = kTrickyPath;
  report.num_partitions = 8;
  report.chains = 5;

  Finding proved;
  proved.status = FindingStatus::kProved;
  proved.rule = "search";
  proved.message = kTrickyMessage;
  proved.instructions = {"all-gather.3", "dynamic-slice.7"};
  proved.first_line = 12;
  proved.last_line = 15;
  proved.global_meaning = "copy.428 = reshape(transpose(param.1))";
  proved.current = {Cost(2, 0, 1048576, 1048576), Cost(2, 0, 8388608, 8388608)};
  proved.proposed = {Cost(1, 0, 262144, 262144), Cost(1, 0, 2097152, 2097152)};
  proved.proposed_hlo =
      "HloModule chain\n\nENTRY e {\n  p = f32[8,16] parameter(0)\n"
      "  ROOT a = f32[8,16] all-to-all(p), dimensions={0}\n}\n";
  proved.proof = "proved: every device gets the same values\nz3: unsat in 12 ms";
  proved.cause = ShardingCause{"copy.428", "x", "{devices=[8,1]<=[8]}", "{devices=[1,8]<=[8]}", ""};
  report.findings.push_back(proved);

  Finding unproven;
  unproven.status = FindingStatus::kUnproven;
  unproven.rule = "search";
  unproven.message = "a cheaper chain exists, but its proof timed out";
  unproven.instructions = {"all-reduce.1"};
  unproven.current = {Cost(1, 0, 4096, 4096), std::nullopt};
  unproven.proposed = {Cost(1, 1, 2048, 2048), std::nullopt};
  unproven.proof = "unknown: timeout after 20000 ms";
  report.findings.push_back(unproven);

  Finding incorrect;
  incorrect.status = FindingStatus::kIncorrect;
  incorrect.rule = "incorrect-chain";
  incorrect.message = "collective-permute.2 does not implement the sharding it claims";
  incorrect.instructions = {"collective-permute.2"};
  incorrect.first_line = 40;
  incorrect.last_line = 40;
  incorrect.current = {Cost(1, 1, 512, 512), std::nullopt};
  incorrect.proposed = {Cost(0, 0, 0, 0), std::nullopt};
  incorrect.proof = "refuted: device 3 gets x[0:2] instead of x[6:8]";
  report.findings.push_back(incorrect);

  Finding pattern;
  pattern.status = FindingStatus::kProved;
  pattern.rule = "all-gather-then-slice";
  pattern.message = "all-gather followed by a slice of the local shard: drop both";
  pattern.instructions = {"all-gather.9", "slice.10"};
  pattern.first_line = 51;
  pattern.last_line = 52;
  pattern.current = {Cost(1, 0, 7168, 7168), std::nullopt};
  pattern.proposed = {Cost(0, 0, 0, 0), std::nullopt};
  pattern.proof = "proved";
  pattern.catalog_rule = "slice-of-all-gather";
  report.findings.push_back(pattern);

  report.notes = {"skipped a chain at line 80: \"while\" body", "tab\there"};
  return report;
}

std::string ShellQuote(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// A file in the test's temporary directory holding `contents`; returns its path.
std::string WriteTempFile(absl::string_view name, absl::string_view contents) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/lint_report_test_", info->name(), "_", name);
  test_support::WriteFileOrFail(path, contents);
  return path;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr.
};

CommandResult Run(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(absl::StrCat(command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

// Loads the JSON file at `path` as `d` in python3 and writes str(`expression`) to stdout.
std::string PythonEval(const std::string& path, absl::string_view expression) {
  const std::string script =
      absl::StrCat("import json, sys\nd = json.load(open(sys.argv[1], encoding='utf-8'))\n",
                   "sys.stdout.write(str(", expression, "))\n");
  const CommandResult result = Run(absl::StrCat("PYTHONIOENCODING=utf-8 python3 -c ",
                                                ShellQuote(script), " ", ShellQuote(path)));
  EXPECT_EQ(result.exit_code, 0) << expression << ":\n" << result.output;
  return result.output;
}

// Runs tests/validate_json_schema.py on `document` against the SARIF schema.
CommandResult ValidateSarif(absl::string_view name, absl::string_view document) {
  const std::string path = WriteTempFile(name, document);
  return Run(absl::StrCat("python3 ", ShellQuote(kValidator), " ", ShellQuote(kSarifSchema), " ",
                          ShellQuote(path)));
}

TEST(LintReportTest, StatusNamesAndCounts) {
  EXPECT_EQ(FindingStatusName(FindingStatus::kProved), "proved");
  EXPECT_EQ(FindingStatusName(FindingStatus::kUnproven), "unproven");
  EXPECT_EQ(FindingStatusName(FindingStatus::kIncorrect), "incorrect");
  const LintReport report = MakeReport();
  EXPECT_EQ(report.proved(), 2);
  EXPECT_EQ(report.incorrect(), 1);
  EXPECT_EQ(LintReport().proved(), 0);
}

TEST(LintReportTest, JsonParsesAndReserialisesIdentically) {
  const std::string json = FormatJson(MakeReport());
  const std::string path = WriteTempFile("report.json", json);
  // Python's own 2-space rendering of what it parsed: same keys, order, values and layout.
  EXPECT_EQ(PythonEval(path, "json.dumps(d, indent=2, ensure_ascii=False) + '\\n'"), json);
}

TEST(LintReportTest, JsonHasTheDocumentedKeysAndValues) {
  const LintReport report = MakeReport();
  const std::string path = WriteTempFile("report.json", FormatJson(report));
  EXPECT_EQ(PythonEval(path, "','.join(d)"),
            "schema,path,num_partitions,chains,findings,notes,inference,summary");
  EXPECT_EQ(PythonEval(path, "','.join(d['findings'][0])"),
            "status,rule,message,instructions,location,global_meaning,current,proposed,"
            "current_topology,proposed_topology,proposed_hlo,proof,catalog_rule,cause");
  EXPECT_EQ(PythonEval(path, "','.join(d['findings'][0]['current'])"),
            "collectives,collective_permutes,max_recv_bytes,max_send_bytes");
  EXPECT_EQ(PythonEval(path, "','.join(d['findings'][0]['cause'])"),
            "instruction,holds,sharding,better_sharding,jax");
  EXPECT_EQ(PythonEval(path, "','.join(d['findings'][0]['location'])"), "first_line,last_line");

  // Strings come back exactly as they went in.
  EXPECT_EQ(PythonEval(path, "d['path']"), kTrickyPath);
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['message']"), kTrickyMessage);
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['proposed_hlo']"), report.findings[0].proposed_hlo);
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['proof']"), report.findings[0].proof);
  EXPECT_EQ(PythonEval(path, "d['notes']"),
            "['skipped a chain at line 80: \"while\" body', 'tab\\there']");

  EXPECT_EQ(PythonEval(path, "(d['num_partitions'], d['chains'])"), "(8, 5)");
  EXPECT_EQ(PythonEval(path, "[f['status'] for f in d['findings']]"),
            "['proved', 'unproven', 'incorrect', 'proved']");
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['instructions']"),
            "['all-gather.3', 'dynamic-slice.7']");
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['location']"),
            "{'first_line': 12, 'last_line': 15}");
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['current']"),
            "{'collectives': 2, 'collective_permutes': 0, 'max_recv_bytes': 1048576, "
            "'max_send_bytes': 1048576}");
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['proposed_topology']['max_recv_bytes']"), "2097152");
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['cause']['better_sharding']"),
            "{devices=[1,8]<=[8]}");
  EXPECT_EQ(PythonEval(path, "d['findings'][0]['catalog_rule']"), "None");
  // No topology, no cause: null.
  EXPECT_EQ(PythonEval(path,
                       "(d['findings'][1]['current_topology'], "
                       "d['findings'][1]['proposed_topology'], d['findings'][1]['cause'])"),
            "(None, None, None)");
  EXPECT_EQ(PythonEval(path, "d['findings'][1]['location']"), "{'first_line': 0, 'last_line': 0}");
  EXPECT_EQ(PythonEval(path, "d['findings'][2]['proposed_hlo']"), "");
  EXPECT_EQ(PythonEval(path, "d['findings'][3]['catalog_rule']"), "slice-of-all-gather");
  EXPECT_EQ(PythonEval(path, "d['summary']"), "{'proved': 2, 'unproven': 1, 'incorrect': 1}");
}

TEST(LintReportTest, JsonEscapesControlCharactersAndInvalidUtf8) {
  LintReport report;
  report.path = "p";
  Finding finding;
  finding.rule = "search";
  // Control characters, a valid two-byte UTF-8 sequence and a stray continuation byte.
  finding.message = std::string(
      "a\x01"
      "b\tc\rd\be\ff\x1f"
      "g \xc3\xa9 \x80 end");
  report.findings.push_back(finding);
  const std::string json = FormatJson(report);
  EXPECT_THAT(json, HasSubstr(R"("message": "a\u0001b\tc\rd\be\ff\u001fg )"));
  const std::string path = WriteTempFile("escapes.json", json);
  EXPECT_EQ(PythonEval(path, "ascii(d['findings'][0]['message'])"),
            "'a\\x01b\\tc\\rd\\x08e\\x0cf\\x1fg \\xe9 \\ufffd end'");
  EXPECT_EQ(PythonEval(path, "json.dumps(d, indent=2, ensure_ascii=False) + '\\n'"), json);
}

TEST(LintReportTest, EmptyReportJson) {
  LintReport report;
  report.path = "empty.hlo";
  report.num_partitions = 4;
  const std::string json = FormatJson(report);
  EXPECT_EQ(json,
            "{\n"
            "  \"schema\": \"spmdcheck-lint/1\",\n"
            "  \"path\": \"empty.hlo\",\n"
            "  \"num_partitions\": 4,\n"
            "  \"chains\": 0,\n"
            "  \"findings\": [],\n"
            "  \"notes\": [],\n"
            "  \"inference\": {\n"
            "    \"unannotated\": 0,\n"
            "    \"holdings\": [],\n"
            "    \"claims\": []\n"
            "  },\n"
            "  \"summary\": {\n"
            "    \"proved\": 0,\n"
            "    \"unproven\": 0,\n"
            "    \"incorrect\": 0\n"
            "  }\n"
            "}\n");
}

TEST(LintReportTest, SarifValidatesAgainstTheOfficialSchema) {
  const CommandResult result = ValidateSarif("report.sarif", FormatSarif(MakeReport()));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(LintReportTest, EmptyReportSarifValidates) {
  LintReport report;
  report.path = "empty.hlo";
  const CommandResult result = ValidateSarif("empty.sarif", FormatSarif(report));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(LintReportTest, SarifContent) {
  const std::string path = WriteTempFile("report.sarif", FormatSarif(MakeReport()));
  EXPECT_EQ(PythonEval(path, "(d['version'], d['$schema'])"),
            "('2.1.0', 'https://json.schemastore.org/sarif-2.1.0.json')");
  EXPECT_EQ(PythonEval(path, "d['runs'][0]['tool']['driver']['name']"), "spmdcheck");
  // One descriptor per distinct rule, in order of first use.
  EXPECT_EQ(PythonEval(path, "[r['id'] for r in d['runs'][0]['tool']['driver']['rules']]"),
            "['search', 'incorrect-chain', 'all-gather-then-slice']");
  EXPECT_EQ(PythonEval(path,
                       "[(r['ruleId'], r['ruleIndex'], r['level']) "
                       "for r in d['runs'][0]['results']]"),
            "[('search', 0, 'warning'), ('search', 0, 'note'), ('incorrect-chain', 1, 'error'), "
            "('all-gather-then-slice', 2, 'warning')]");
  const std::string results = "d['runs'][0]['results']";
  // The path as a URI reference.
  EXPECT_EQ(PythonEval(path, absl::StrCat(results,
                                          "[0]['locations'][0]['physicalLocation']"
                                          "['artifactLocation']['uri']")),
            "models/llama%20%227b%22.hlo");
  EXPECT_EQ(PythonEval(path, absl::StrCat(results,
                                          "[0]['locations'][0]['physicalLocation']"
                                          "['region']")),
            "{'startLine': 12, 'endLine': 15}");
  // No location: no region (SARIF lines start at 1).
  EXPECT_EQ(PythonEval(path, absl::StrCat("'region' in ", results,
                                          "[1]['locations'][0]['physicalLocation']")),
            "False");
  const std::string message = PythonEval(path, absl::StrCat(results, "[0]['message']['text']"));
  EXPECT_THAT(message, HasSubstr(kTrickyMessage));
  EXPECT_THAT(message, HasSubstr("cost now: 2 collective(s)"));
  EXPECT_THAT(message, HasSubstr("proposed: 1 collective(s)"));
  EXPECT_THAT(message, HasSubstr("with topology: "));
  EXPECT_THAT(message, HasSubstr("change the sharding of x (instruction copy.428) from "
                                 "{devices=[8,1]<=[8]} to {devices=[1,8]<=[8]}"));
  EXPECT_EQ(PythonEval(path, absl::StrCat(results, "[0]['properties']['status']")), "proved");
  EXPECT_EQ(PythonEval(path, absl::StrCat(results, "[0]['properties']['proposed']['collectives']")),
            "1");
  EXPECT_EQ(PythonEval(path, absl::StrCat(results, "[0]['properties']['proposed_hlo']")),
            MakeReport().findings[0].proposed_hlo);
}

// The validator (and so SarifValidatesAgainstTheOfficialSchema) does reject invalid SARIF.
TEST(LintReportTest, ValidatorRejectsInvalidSarif) {
  const std::string sarif = FormatSarif(MakeReport());
  ASSERT_THAT(sarif, HasSubstr("  \"version\": \"2.1.0\",\n"));

  const CommandResult no_version = ValidateSarif(
      "no_version.sarif", absl::StrReplaceAll(sarif, {{"  \"version\": \"2.1.0\",\n", ""}}));
  EXPECT_EQ(no_version.exit_code, 1) << no_version.output;
  EXPECT_THAT(no_version.output, HasSubstr("'version' is a required property"));

  const CommandResult line_zero = ValidateSarif(
      "line_zero.sarif", absl::StrReplaceAll(sarif, {{"\"startLine\": 12", "\"startLine\": 0"}}));
  EXPECT_EQ(line_zero.exit_code, 1) << line_zero.output;

  const CommandResult bad_level =
      ValidateSarif("bad_level.sarif",
                    absl::StrReplaceAll(sarif, {{"\"level\": \"error\"", "\"level\": \"fatal\""}}));
  EXPECT_EQ(bad_level.exit_code, 1) << bad_level.output;

  const CommandResult not_json = ValidateSarif("not_json.sarif", "{\"version\": ");
  EXPECT_EQ(not_json.exit_code, 1) << not_json.output;
}

TEST(LintReportTest, Text) {
  const std::string text = FormatText(MakeReport());
  EXPECT_THAT(text,
              HasSubstr(absl::StrCat(kTrickyPath, ":12: proved [search] ", kTrickyMessage, "\n")));
  EXPECT_THAT(text, HasSubstr("\n  instructions: all-gather.3, dynamic-slice.7\n"));
  EXPECT_THAT(text, HasSubstr("\n  global meaning: copy.428 = reshape(transpose(param.1))\n"));
  EXPECT_THAT(text, HasSubstr("\n  cost now: 2 collective(s), 0 collective-permute(s), max 1048576 "
                              "bytes received / 1048576 bytes sent per device\n"
                              "    with topology: 2 collective(s), 0 collective-permute(s), max "
                              "8388608 bytes received / 8388608 bytes sent per device\n"
                              "  proposed: 1 collective(s), 0 collective-permute(s), max 262144 "
                              "bytes received / 262144 bytes sent per device\n"
                              "    with topology: "));
  EXPECT_THAT(text, HasSubstr("\n  proof:\n    proved: every device gets the same values\n"
                              "    z3: unsat in 12 ms\n"));
  EXPECT_THAT(text, HasSubstr("\n  hint: change the sharding of x (instruction copy.428) from "
                              "{devices=[8,1]<=[8]} to {devices=[1,8]<=[8]}"));
  EXPECT_THAT(text, HasSubstr("\n  proposed HLO:\n    HloModule chain\n\n    ENTRY e {\n"
                              "      p = f32[8,16] parameter(0)\n"));
  // No location: no line number.
  EXPECT_THAT(text, HasSubstr(absl::StrCat("\n", kTrickyPath,
                                           ": unproven [search] a cheaper chain exists")));
  EXPECT_THAT(text, HasSubstr("\n  proof: unknown: timeout after 20000 ms\n"));
  EXPECT_THAT(text,
              HasSubstr(absl::StrCat("\n", kTrickyPath, ":40: incorrect [incorrect-chain] ")));
  EXPECT_THAT(text, HasSubstr("\n  catalog rule: slice-of-all-gather\n"));
  // Without a topology, no topology line after the unproven finding's costs.
  EXPECT_THAT(text, HasSubstr("\n  cost now: 1 collective(s), 1 collective-permute(s), max 512 "
                              "bytes received / 512 bytes sent per device\n  proposed: "));
  EXPECT_THAT(text, HasSubstr("\n5 chain(s) examined, 2 proved finding(s), 1 unproven, 1 "
                              "incorrect chain(s)\nnote: skipped a chain at line 80: \"while\" "
                              "body\nnote: tab\there\n"));
  EXPECT_THAT(FormatText(LintReport()), Not(HasSubstr("note:")));
  EXPECT_EQ(FormatText(LintReport()),
            "0 chain(s) examined, 0 proved finding(s), 0 unproven, 0 incorrect chain(s)\n");
}

}  // namespace
}  // namespace spmdcheck::lint
