#include "tools/cli.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"

namespace spmdcheck::cli {

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& argv,
                                 const std::set<std::string>& value_flags,
                                 const std::set<std::string>& bool_flags) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "-o" && value_flags.count("-o")) {
      if (i + 1 >= argv.size()) return absl::InvalidArgumentError("-o needs a value");
      args.values_["-o"] = argv[++i];
      continue;
    }
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      args.positional_.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (bool_flags.count(name)) {
      if (value.has_value())
        return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
      args.values_[name] = "true";
    } else if (value_flags.count(name)) {
      if (!value.has_value()) {
        if (i + 1 >= argv.size())
          return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
        value = argv[++i];
      }
      args.values_[name] = *value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", name));
    }
  }
  return args;
}

bool Args::Has(absl::string_view flag) const { return values_.find(flag) != values_.end(); }

std::optional<std::string> Args::Get(absl::string_view flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<int64_t> Args::GetInt(absl::string_view flag, int64_t fallback) const {
  std::optional<std::string> value = Get(flag);
  if (!value.has_value()) return fallback;
  int64_t n = 0;
  if (!absl::SimpleAtoi(*value, &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " expects an integer, not '", *value, "'"));
  }
  return n;
}

absl::StatusOr<uint64_t> Args::GetUint64(absl::string_view flag, uint64_t fallback) const {
  std::optional<std::string> value = Get(flag);
  if (!value.has_value()) return fallback;
  uint64_t n = 0;
  if (value->empty() || (*value)[0] == '-' || !absl::SimpleAtoi(*value, &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " expects an integer in [0, 2^64), not '", *value, "'"));
  }
  return n;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": error: no such file"));
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": error: is a directory"));
  }
  if (static_cast<size_t>(info.st_size) > kMaxInputBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": error: the file is ", info.st_size,
                                                   " bytes; inputs over 1 GiB are not accepted"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path, ": error: cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int BadInput(std::ostream& err, absl::string_view command, absl::string_view message) {
  if (absl::StrContains(message, ": error: ")) {
    err << message << "\n";
  } else {
    err << "spmdcheck " << command << ": error: " << message << "\n";
  }
  return kExitBadInput;
}

}  // namespace spmdcheck::cli
