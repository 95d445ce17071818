#include "smt/rewrite_rules.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "smt/builtin_rules.h"
#include "smt/rewrite_expr.h"
#include "smt/rewrite_semantics.h"
#include "smt/rule_language.h"

namespace spmdcheck::smt::rw {

Expr RuleContext::Size(const std::string& name, int64_t value) {
  if (!symbolic_) return Const(value);
  Expr v = Var(absl::StrCat("size_", name));
  assumptions_.push_back(Le(Const(1), v));
  return v;
}

std::vector<int64_t> RuleContext::ConcreteSizes() const {
  std::vector<int64_t> sizes;
  if (symbolic_) return sizes;
  for (const Expr& s : mesh_.sizes) {
    int64_t v = 0;
    IsConst(s, &v);
    sizes.push_back(v);
  }
  return sizes;
}

namespace {

struct Catalog {
  std::vector<RuleDef> rules;
  absl::Status status;
};

const Catalog& BuiltinCatalog() {
  static const Catalog* catalog = [] {
    auto* c = new Catalog;
    for (const BuiltinRuleFile& file : BuiltinRuleFiles()) {
      absl::StatusOr<std::vector<RuleDef>> rules = ParseRules(file.text, file.path);
      if (!rules.ok()) {
        c->status = rules.status();
        continue;
      }
      for (RuleDef& r : *rules) c->rules.push_back(std::move(r));
    }
    return c;
  }();
  return *catalog;
}

}  // namespace

const std::vector<RuleDef>& RewriteRules() { return BuiltinCatalog().rules; }

absl::Status BuiltinRulesStatus() { return BuiltinCatalog().status; }

}  // namespace spmdcheck::smt::rw
