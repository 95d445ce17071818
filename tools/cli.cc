#include "tools/cli.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace spmdcheck::cli {

namespace {

// The help of a subcommand: its usage first, then the description, the positional arguments, the
// flags by group (metavariables as the usage names them) and the footer.
class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(std::string usage) : usage_(std::move(usage)) {
    column_width(26);
    label("Positionals", "arguments");
  }

  std::string make_help(const CLI::App* app, std::string /*name*/,
                        CLI::AppFormatMode /*mode*/) const override {
    std::string help = usage_;
    const std::string description = make_description(app);
    if (!description.empty()) absl::StrAppend(&help, "\n", description);
    absl::StrAppend(&help, make_positionals(app));
    // Each group of flags after one blank line (CLI11's make_groups leaves two between groups).
    for (const std::string& group : app->get_groups()) {
      std::vector<const CLI::Option*> options = app->get_options([&group](const CLI::Option* opt) {
        return opt->get_group() == group && opt->nonpositional();
      });
      if (!group.empty() && !options.empty()) {
        absl::StrAppend(&help, make_group(group, false, std::move(options)));
      }
    }
    const std::string footer = make_footer(app);
    if (!footer.empty()) absl::StrAppend(&help, "\n", footer);
    return help;
  }

  std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
    return usage_;
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_positional() || opt->get_type_size() == 0) return "";
    return absl::StrCat(" ", opt->get_type_name(), opt->get_required() ? " (required)" : "");
  }

 private:
  std::string usage_;
};

// What CLI11 left over: an unknown flag, or an argument no positional takes.
std::string ExtrasMessage(const std::vector<std::string>& extras) {
  for (const std::string& extra : extras) {
    if (absl::StartsWith(extra, "-") && extra.size() > 1 &&
        !absl::ascii_isdigit(static_cast<unsigned char>(extra[1]))) {
      return absl::StrCat("unknown flag ", extra.substr(0, extra.find('=')));
    }
  }
  if (extras.empty()) return "unexpected arguments";
  return absl::StrCat("unexpected argument '", extras.front(), "'");
}

}  // namespace

Command::Command(std::string name, std::string usage, std::string description, std::string footer)
    : name_(std::move(name)),
      usage_(std::move(usage)),
      app_(std::move(description), absl::StrCat("spmdcheck ", name_)) {
  app_.formatter(std::make_shared<HelpFormatter>(usage_));
  app_.footer(std::move(footer));
  // As the hand-written parser did: a flag given twice keeps its last value.
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_.option_defaults()->group("flags");
  // --help at once, before the other flags' values are converted or checked (CLI11's own help
  // flag is looked at only after them).
  app_.set_help_flag();
  app_.add_flag_callback(
          "-h,--help", [] { throw CLI::CallForHelp(); }, "print this help and exit")
      ->trigger_on_parse();
}

std::optional<int> Command::Parse(const std::vector<std::string>& argv, std::ostream& out,
                                  std::ostream& err) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << Help();
    return kExitHolds;
  } catch (const CLI::ExtrasError&) {
    return UsageError(err, ExtrasMessage(app_.remaining()));
  } catch (const CLI::ParseError& error) {
    return UsageError(err, error.what());
  }
  return std::nullopt;
}

int Command::UsageError(std::ostream& err, absl::string_view message) const {
  BadInput(err, name_, message);
  err << usage_;
  return kExitBadInput;
}

CLI::Validator DecimalInt64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        if (!absl::SimpleAtoi(text, &value)) {
          return absl::StrCat("expects an integer, not '", text, "'");
        }
        text = absl::StrCat(value);
        return "";
      },
      "");
}

CLI::Validator DecimalUint64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        if (absl::StrContains(text, '-') || !absl::SimpleAtoi(text, &value)) {
          return absl::StrCat("expects an integer in [0, 2^64), not '", text, "'");
        }
        text = absl::StrCat(value);
        return "";
      },
      "");
}

CLI::Validator Number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!absl::SimpleAtod(text, &value)) {
          return absl::StrCat("expects a number, not '", text, "'");
        }
        return "";
      },
      "");
}

CLI::Validator InputFile() { return CLI::Validator(CLI::ExistingFile).description(""); }

int BadInput(std::ostream& err, absl::string_view command, absl::string_view message) {
  if (absl::StrContains(message, ": error: ")) {
    err << message << "\n";
  } else {
    err << "spmdcheck " << command << ": error: " << message << "\n";
  }
  return kExitBadInput;
}

}  // namespace spmdcheck::cli
