// The seed case of the XLA report (../shared/cases/seed-scatter/gspmd.hlo) for benchmarks: its
// text, and the same module at the report's real sizes.
#ifndef SPMDCHECK_BENCH_SEED_CASE_H_
#define SPMDCHECK_BENCH_SEED_CASE_H_

#include <string>

#include "absl/strings/str_replace.h"
#include "base/file.h"

namespace spmdcheck::bench {

// gspmd.hlo under `shared`, or "" when it cannot be read.
inline std::string ReadSeedChain(const std::string& shared) {
  return base::ReadFile(shared + "/cases/seed-scatter/gspmd.hlo").value_or("");
}

// The report's sizes: bf16[8,4,2,64,128] globally (a 16 KiB local shard, a 128 KiB result per
// device), every sharding unchanged.
inline std::string AtReportSizes(const std::string& shrunk) {
  return absl::StrReplaceAll(shrunk, {{"[3,1,1,2,4]", "[8,1,1,8,128]"},
                                      {"[3,1,2,4]", "[8,1,8,128]"},
                                      {"[1,3,2,4]", "[1,8,8,128]"},
                                      {"[1,3,16,4]", "[1,8,64,128]"},
                                      {"[3,16,4]", "[8,64,128]"}});
}

}  // namespace spmdcheck::bench

#endif  // SPMDCHECK_BENCH_SEED_CASE_H_
