// The built-in rewrite catalog as its rule files (smt/rules/*.rules, embedded in the binary at
// build time by smt/rules/embed.cmake): the rules `prove rewrites` checks, written in the format
// users write their own in (smt/rule_language.h).
#ifndef SPMDCHECK_SMT_BUILTIN_RULES_H_
#define SPMDCHECK_SMT_BUILTIN_RULES_H_

#include <vector>

namespace spmdcheck::smt {

struct BuiltinRuleFile {
  const char* path;  // e.g. `smt/rules/gathers.rules`
  const char* text;
};

const std::vector<BuiltinRuleFile>& BuiltinRuleFiles();

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_BUILTIN_RULES_H_
