// The sdy-level program generator: the same seed gives the same program, the programs draw on
// every construct it promises, and their text is well-formed at the level a test without jaxlib
// can see (balanced regions, one mesh, the partition count). Whether jaxlib and Shardy accept
// them is measured by the campaign (docs/fuzz.md) and tests/cli_sdy_fuzz_test.sh.
#include "fuzz/sdy_program_gen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace spmdcheck::fuzz {
namespace {

using ::testing::HasSubstr;

TEST(SdyProgramGenTest, SameSeedSameProgram) {
  for (uint64_t seed : {1u, 7u, 123456u}) {
    EXPECT_EQ(GenerateSdyProgram(seed).text, GenerateSdyProgram(seed).text);
  }
  EXPECT_NE(GenerateSdyProgram(1).text, GenerateSdyProgram(2).text);
}

TEST(SdyProgramGenTest, ProgramsUseEveryConstruct) {
  std::map<std::string, int> seen;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const SdyProgram program = GenerateSdyProgram(seed);
    for (const std::string& c : program.constructs) ++seen[c];
  }
  for (const char* construct :
       {"open-dim", "priority", "sub-axis", "uneven", "constraint", "reshard", "sharding-group",
        "unreduced", "manual", "manual-partial", "all-reduce", "all-gather", "collective-permute",
        "unsharded-result", "unsharded-parameter"}) {
    EXPECT_GE(seen[construct], 5) << construct;
  }
}

TEST(SdyProgramGenTest, TextIsWellFormed) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const SdyProgram program = GenerateSdyProgram(seed);
    SCOPED_TRACE(program.text);
    int depth = 0;
    for (char c : program.text) {
      depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      ASSERT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0);
    EXPECT_THAT(program.text,
                HasSubstr(absl::StrCat("mhlo.num_partitions = ", program.num_devices, " : i32")));
    EXPECT_THAT(program.text, HasSubstr("sdy.mesh @mesh = <["));
    EXPECT_THAT(program.text, HasSubstr("    return "));
    EXPECT_TRUE(program.num_devices == 2 || program.num_devices == 4 || program.num_devices == 8);
  }
  SdyProgramOptions two;
  two.max_devices = 2;
  EXPECT_EQ(GenerateSdyProgram(5, two).num_devices, 2);
}

}  // namespace
}  // namespace spmdcheck::fuzz
