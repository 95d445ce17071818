#include "nightly/libfuzzer.h"

#include <cstring>
#include <map>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"

namespace spmdcheck::nightly {
namespace {

// The number after `key` in `line` (`cov: 123`, `exec/s 45`), or -1.
int64_t NumberAfter(absl::string_view line, absl::string_view key) {
  size_t at = line.find(key);
  if (at == absl::string_view::npos) return -1;
  at += key.size();
  while (at < line.size() && (line[at] == ' ' || line[at] == ':' || line[at] == '\t')) ++at;
  size_t end = at;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
  int64_t value = -1;
  if (end == at || !absl::SimpleAtoi(line.substr(at, end - at), &value)) return -1;
  return value;
}

bool SkippedFrame(absl::string_view function) {
  for (absl::string_view prefix : {"__sanitizer",
                                   "__asan",
                                   "__ubsan",
                                   "__lsan",
                                   "__interceptor",
                                   "__interception",
                                   "fuzzer::",
                                   "__GI_",
                                   "__libc",
                                   "__cxa",
                                   "abort",
                                   "raise",
                                   "gsignal",
                                   "malloc",
                                   "calloc",
                                   "realloc",
                                   "free",
                                   "operator new",
                                   "operator delete",
                                   "__pthread",
                                   "pthread_kill",
                                   "std::__terminate",
                                   "_start",
                                   "__assert"}) {
    if (absl::StartsWith(function, prefix)) return true;
  }
  return false;
}

std::string Fnv8(absl::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%08x", static_cast<uint32_t>(hash ^ (hash >> 32)));
}

}  // namespace

LibFuzzerStats ParseLibFuzzerStats(absl::string_view log) {
  LibFuzzerStats stats;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StartsWith(line, "stat::number_of_executed_units:")) {
      stats.execs = NumberAfter(line, "stat::number_of_executed_units");
      continue;
    }
    if (absl::StartsWith(line, "stat::average_exec_per_sec:")) {
      stats.execs_per_second = static_cast<double>(NumberAfter(line, "stat::average_exec_per_sec"));
      continue;
    }
    if (!absl::StartsWith(line, "#")) continue;
    const int64_t cov = NumberAfter(line, " cov");
    if (cov < 0) continue;
    stats.coverage = cov;
    // `#123` or fork mode's `#123:`.
    if (int64_t n = NumberAfter(line, "#"); n >= 0) stats.execs = n;
    if (int64_t ft = NumberAfter(line, " ft"); ft >= 0) stats.features = ft;
    if (int64_t corp = NumberAfter(line, " corp"); corp >= 0) stats.corpus = corp;
    if (int64_t rate = NumberAfter(line, "exec/s"); rate >= 0) {
      stats.execs_per_second = static_cast<double>(rate);
    }
  }
  return stats;
}

CrashInfo ParseCrash(absl::string_view log) {
  CrashInfo info;
  std::string invariant;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!info.kind.empty() && info.kind != "deadly-signal") break;
    if (absl::StrContains(line, "FUZZ INVARIANT BROKEN")) {
      info.kind = "invariant";
      info.summary = std::string(line);
      invariant = std::string(line);
    } else if (absl::StrContains(line, "ERROR: LeakSanitizer")) {
      info.kind = "leak";
      info.summary = std::string(line);
    } else if (absl::StrContains(line, ": runtime error: ") && info.kind.empty()) {
      info.kind = "ubsan";
      info.summary = std::string(line);
    } else if (absl::StrContains(line, "ERROR: libFuzzer: timeout")) {
      info.kind = "timeout";
      info.summary = std::string(line);
    } else if (absl::StrContains(line, "ERROR: libFuzzer: out-of-memory")) {
      info.kind = "oom";
      info.summary = std::string(line);
    } else if (size_t at = line.find("ERROR: AddressSanitizer: "); at != absl::string_view::npos) {
      absl::string_view rest = line.substr(at + strlen("ERROR: AddressSanitizer: "));
      info.kind = std::string(rest.substr(0, rest.find(' ')));
      info.summary = std::string(line);
    } else if (absl::StrContains(line, "ERROR: libFuzzer: deadly signal") && info.kind.empty()) {
      info.kind = "deadly-signal";
      info.summary = std::string(line);
    }
  }
  if (info.kind.empty()) info.kind = "crash";
  // The first stack: `    #0 0x55d0c1 in spmdcheck::Foo(int) /src/foo.cc:12:3`.
  static const std::regex kFrame(
      R"(^\s*#(\d+) 0x[0-9a-fA-F]+ in (.+?)( /\S+| \(\S+\+0x[0-9a-f]+\)|$))");
  int last_index = -1;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    std::match_results<absl::string_view::const_iterator> m;
    if (!std::regex_search(line.begin(), line.end(), m, kFrame)) continue;
    const int index = std::stoi(m[1].str());
    if (index <= last_index) break;  // The next stack (e.g. where a freed block was allocated).
    last_index = index;
    std::string function = m[2].str();
    if (SkippedFrame(function)) continue;
    if (info.frames.size() < 3) info.frames.push_back(function);
  }
  if (!info.frames.empty() || !invariant.empty()) {
    info.hash =
        Fnv8(absl::StrCat(info.kind, "\n", invariant, "\n", absl::StrJoin(info.frames, "\n")));
  }
  // Kinds become part of a file name.
  for (char& c : info.kind) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) c = '-';
  }
  return info;
}

std::string LibFuzzerSignature(const std::string& target, const CrashInfo& crash) {
  return absl::StrCat("libfuzzer.", target, ".", crash.kind,
                      crash.hash.empty() ? "" : absl::StrCat(".", crash.hash));
}

std::string ArtifactKind(absl::string_view file_name) {
  for (absl::string_view kind : {"crash", "leak", "timeout", "oom", "slow-unit"}) {
    if (absl::StartsWith(file_name, absl::StrCat(kind, "-"))) return std::string(kind);
  }
  return "";
}

const std::vector<std::string>& LibFuzzerTargets() {
  static const auto* const kTargets =
      new std::vector<std::string>{"fuzz_hlo_parser", "fuzz_sharding_parser", "fuzz_literal_parser",
                                   "fuzz_reshard", "fuzz_partition"};
  return *kTargets;
}

std::vector<std::string> LibFuzzerTargetFlags(const std::string& target,
                                              const std::string& source_dir) {
  std::vector<std::string> flags;
  static const auto* const kDict =
      new std::map<std::string, std::string>{{"fuzz_hlo_parser", "hlo.dict"},
                                             {"fuzz_sharding_parser", "sharding.dict"},
                                             {"fuzz_literal_parser", "literal.dict"}};
  const std::string options_path = source_dir + "/fuzz/targets/" + target + ".options";
  const absl::StatusOr<std::string> options = base::ReadFile(options_path);
  bool has_dict = false;
  if (options.ok()) {
    // The target's OSS-Fuzz options file: `key = value` lines of its [libfuzzer] section.
    bool in_section = false;
    for (absl::string_view line : absl::StrSplit(*options, '\n')) {
      absl::string_view text = absl::StripAsciiWhitespace(line);
      if (text.empty() || text[0] == '#' || text[0] == ';') continue;
      if (text[0] == '[') {
        in_section = text == "[libfuzzer]";
        continue;
      }
      const size_t eq = text.find('=');
      if (!in_section || eq == absl::string_view::npos) continue;
      const std::string key(absl::StripAsciiWhitespace(text.substr(0, eq)));
      std::string value(absl::StripAsciiWhitespace(text.substr(eq + 1)));
      if (key.empty()) continue;
      if (key == "dict") {
        has_dict = true;
        value = absl::StrCat(source_dir, "/fuzz/targets/", value);
      }
      flags.push_back(absl::StrCat("-", key, "=", value));
    }
  } else {
    // No options file: as scripts/fuzz-smoke runs them.
    static const auto* const kMaxLen = new std::map<std::string, int>{{"fuzz_hlo_parser", 2048},
                                                                      {"fuzz_sharding_parser", 256},
                                                                      {"fuzz_literal_parser", 256},
                                                                      {"fuzz_reshard", 64},
                                                                      {"fuzz_partition", 652}};
    static const auto* const kTimeout =
        new std::map<std::string, int>{{"fuzz_partition", 60}, {"fuzz_reshard", 30}};
    if (auto it = kMaxLen->find(target); it != kMaxLen->end()) {
      flags.push_back(absl::StrCat("-max_len=", it->second));
    }
    auto it = kTimeout->find(target);
    flags.push_back(absl::StrCat("-timeout=", it == kTimeout->end() ? 10 : it->second));
    flags.push_back("-rss_limit_mb=2048");
    if (target == "fuzz_partition") flags.push_back("-entropic=0");
  }
  if (auto it = kDict->find(target); it != kDict->end() && !has_dict) {
    flags.push_back(absl::StrCat("-dict=", source_dir, "/fuzz/targets/", it->second));
  }
  return flags;
}

}  // namespace spmdcheck::nightly
