#include "smt/rule_language.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status.h"
#include "smt/rewrite_expr.h"
#include "smt/rewrite_semantics.h"

namespace spmdcheck::smt::rw {
namespace {

// ---------------------------------------------------------------------------------- syntax

struct Term;
using TermP = std::shared_ptr<const Term>;

// An expression of the rule language: numbers, names (axes, sizes, `pid`), calls (`axes(a,b)`,
// `pos(a)`, `shift(a,1)`), brace lists and operators.
struct Term {
  enum class Kind { kNum, kName, kCall, kList, kBinary, kUnary };
  Kind kind = Kind::kNum;
  int64_t value = 0;
  std::string name;  // kName, kCall; the operator for kBinary/kUnary.
  std::vector<TermP> args;
  int line = 0;
  int col = 0;
};

struct Statement {
  int line = 0;
  bool root = false;
  std::string name;
  std::vector<TermP> dims;
  std::string opcode;
  std::vector<std::string> operands;
  int64_t number = 0;                  // parameter(N), constant(V).
  std::map<std::string, TermP> attrs;  // A flag attribute maps to nullptr.
};

struct RuleText {
  int line = 0;
  std::string name;
  std::string summary;
  std::string xla_pass;
  bool sound = true;
  std::vector<std::string> axes;
  std::vector<std::pair<std::string, int64_t>> sizes;
  int64_t min_mesh_rank = 0;
  std::vector<Statement> lhs, rhs;
  std::string source;
};

class ParseError {
 public:
  ParseError(absl::string_view path, int line, int col, absl::string_view message)
      : status_(absl::InvalidArgumentError(
            absl::StrCat(base::SourceLocation(path, line, col), ": error: ", message))) {}
  absl::Status status() const { return status_; }

 private:
  absl::Status status_;
};

// A cursor over one line.
class LineParser {
 public:
  LineParser(std::string path, int line, absl::string_view text)
      : path_(std::move(path)), line_(line), text_(text) {}

  [[noreturn]] void Fail(const std::string& message) const {
    throw ParseError(path_, line_, static_cast<int>(pos_) + 1, message);
  }
  // Back to the start of the line (for errors about the whole line).
  void Rewind() { pos_ = 0; }
  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() {
    Skip();
    return pos_ >= text_.size();
  }
  char Peek() {
    Skip();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool TryConsume(absl::string_view s) {
    Skip();
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  void Expect(absl::string_view s, absl::string_view what) {
    if (!TryConsume(s)) Fail(absl::StrCat("expected '", s, "' ", what));
  }
  // An identifier of the expression language.
  std::string Ident() {
    Skip();
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (pos_ == start || std::isdigit(static_cast<unsigned char>(text_[start]))) {
      pos_ = start;
      Fail("expected a name");
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  // An instruction name or opcode: letters, digits, `.`, `-`, `_`.
  std::string HloName() {
    Skip();
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '.' || text_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) Fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }
  int64_t Number() {
    Skip();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    int64_t v = 0;
    if (pos_ == start || !absl::SimpleAtoi(text_.substr(start, pos_ - start), &v)) {
      pos_ = start;
      Fail("expected a number");
    }
    return v;
  }
  std::string Quoted() {
    Skip();
    if (pos_ >= text_.size() || text_[pos_] != '"') Fail("expected a quoted string");
    const size_t end = text_.find('"', pos_ + 1);
    if (end == absl::string_view::npos) Fail("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  std::string Rest() {
    Skip();
    std::string s(absl::StripTrailingAsciiWhitespace(text_.substr(pos_)));
    pos_ = text_.size();
    return s;
  }

  TermP ParseTerm() { return Or(); }

 private:
  TermP Make(Term::Kind kind, std::string name, std::vector<TermP> args, int col) {
    auto t = std::make_shared<Term>();
    t->kind = kind;
    t->name = std::move(name);
    t->args = std::move(args);
    t->line = line_;
    t->col = col;
    return t;
  }
  int Col() {
    Skip();
    return static_cast<int>(pos_) + 1;
  }
  TermP Binary(const std::function<TermP()>& next, const std::vector<std::string>& ops) {
    TermP left = next();
    while (true) {
      const int col = Col();
      std::string found;
      for (const std::string& op : ops) {
        if (text_.substr(pos_, op.size()) == op) {
          // `<` must not swallow `<=`, `=` alone is not an operator.
          if (found.size() < op.size()) found = op;
        }
      }
      if (found.empty()) return left;
      pos_ += found.size();
      TermP right = next();
      left = Make(Term::Kind::kBinary, found, {left, right}, col);
    }
  }
  TermP Or() {
    return Binary([this] { return And(); }, {"||"});
  }
  TermP And() {
    return Binary([this] { return Compare(); }, {"&&"});
  }
  TermP Compare() {
    return Binary([this] { return Sum(); }, {"==", "!=", "<=", ">=", "<", ">"});
  }
  TermP Sum() {
    return Binary([this] { return ProductTerm(); }, {"+", "-"});
  }
  TermP ProductTerm() {
    return Binary([this] { return Unary(); }, {"*", "/", "%"});
  }
  TermP Unary() {
    const int col = Col();
    if (TryConsume("!")) return Make(Term::Kind::kUnary, "!", {Unary()}, col);
    if (TryConsume("-")) return Make(Term::Kind::kUnary, "-", {Unary()}, col);
    return Primary();
  }
  TermP Primary() {
    const int col = Col();
    const char c = Peek();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      TermP t = Make(Term::Kind::kNum, "", {}, col);
      const_cast<Term&>(*t).value = Number();
      return t;
    }
    if (c == '(') {
      ++pos_;
      TermP t = ParseTerm();
      Expect(")", "to close a parenthesis");
      return t;
    }
    if (c == '{') {
      ++pos_;
      std::vector<TermP> items;
      if (!TryConsume("}")) {
        do {
          items.push_back(ParseTerm());
        } while (TryConsume(","));
        Expect("}", "to close a list");
      }
      return Make(Term::Kind::kList, "", std::move(items), col);
    }
    std::string name = Ident();
    if (TryConsume("(")) {
      std::vector<TermP> args;
      if (!TryConsume(")")) {
        do {
          args.push_back(ParseTerm());
        } while (TryConsume(","));
        Expect(")", "to close a call");
      }
      return Make(Term::Kind::kCall, std::move(name), std::move(args), col);
    }
    return Make(Term::Kind::kName, std::move(name), {}, col);
  }

  std::string path_;
  int line_;
  absl::string_view text_;
  size_t pos_ = 0;
};

// `text` without a trailing `#` or `//` comment (outside double quotes).
absl::string_view StripComment(absl::string_view text) {
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') quoted = !quoted;
    if (quoted) continue;
    if (text[i] == '#' || (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/')) {
      return text.substr(0, i);
    }
  }
  return text;
}

Statement ParseStatement(LineParser& p, int line) {
  Statement s;
  s.line = line;
  if (p.TryConsume("ROOT ")) s.root = true;
  s.name = p.HloName();
  p.Expect("=", "after the instruction name");
  p.HloName();  // The element type (f32, s32, ...): values are exact, the type is not used.
  p.Expect("[", "to open the shape");
  if (!p.TryConsume("]")) {
    do {
      s.dims.push_back(p.ParseTerm());
    } while (p.TryConsume(","));
    p.Expect("]", "to close the shape");
  }
  s.opcode = p.HloName();
  p.Expect("(", "to open the operands");
  if (s.opcode == "parameter" || s.opcode == "constant") {
    s.number = p.Number();
    p.Expect(")", "to close the operands");
  } else if (!p.TryConsume(")")) {
    do {
      s.operands.push_back(p.HloName());
    } while (p.TryConsume(","));
    p.Expect(")", "to close the operands");
  }
  while (p.TryConsume(",")) {
    const std::string key = p.Ident();
    s.attrs[key] = p.TryConsume("=") ? p.ParseTerm() : nullptr;
  }
  if (!p.AtEnd()) p.Fail("unexpected text after the instruction");
  return s;
}

// ------------------------------------------------------------------------------- semantics

using PairList = std::vector<std::pair<int64_t, int64_t>>;

// Interprets one side of a rule on the mesh and axis choice of a RuleContext. The values it
// builds call back into it (offsets and masks per device) after the build, so it lives on the
// heap, shared by them, and keeps copies of what it needs from the context.
class Interpreter : public std::enable_shared_from_this<Interpreter> {
 public:
  Interpreter(std::shared_ptr<const RuleText> rule, const RuleContext& ctx,
              std::map<std::string, Expr> sizes)
      : rule_(std::move(rule)),
        mesh_(ctx.mesh()),
        axes_(ctx.axes()),
        symbolic_(ctx.symbolic()),
        concrete_sizes_(ctx.ConcreteSizes()),
        sizes_(std::move(sizes)) {
    for (size_t k = 0; k < rule_->axes.size(); ++k) axis_[rule_->axes[k]] = static_cast<int>(k);
  }

  Dist Side(const std::vector<Statement>& statements) {
    std::map<std::string, Dist> values;
    Dist root;
    for (const Statement& s : statements) {
      Dist v = Op(s, values);
      if (!error_.empty() && v.error.empty()) v.error = error_;
      values[s.name] = v;
      if (s.root) root = v;
    }
    return root;
  }

 private:
  const MeshModel& mesh() const { return mesh_; }
  bool Symbolic() const { return symbolic_; }
  int MeshAxis(const std::string& name) const { return axes_[axis_.at(name)]; }

  void Error(const Statement& s, const std::string& message) {
    if (error_.empty()) error_ = absl::StrCat("line ", s.line, ": ", message);
  }
  void NeedConcrete(int line, const std::string& what) {
    if (Symbolic() && error_.empty()) {
      error_ = absl::StrCat("line ", line, ": ", what, " needs a concrete mesh");
    }
  }

  // An integer of the rule (a size, an offset, a mask); `d` is the device (null: none).
  Expr Int(const Term& t, const Device* d) {
    switch (t.kind) {
      case Term::Kind::kNum:
        return Const(t.value);
      case Term::Kind::kName:
        if (axis_.count(t.name)) return mesh().sizes[MeshAxis(t.name)];
        if (t.name == "pid" && d != nullptr) return mesh().Id(*d);
        return Size(t.name);
      case Term::Kind::kCall:
        if (t.name == "pos" && d != nullptr) return AxisGroups(mesh(), Axes(t.args)).position(*d);
        if (t.name == "coord" && d != nullptr) return (*d)[MeshAxis(t.args[0]->name)];
        if (t.name == "table" && d != nullptr) return TableOf(t, *d);
        return Const(0);
      case Term::Kind::kUnary:
        return t.name == "!" ? Not(Int(*t.args[0], d)) : Sub(Const(0), Int(*t.args[0], d));
      case Term::Kind::kBinary: {
        const Expr a = Int(*t.args[0], d);
        const Expr b = Int(*t.args[1], d);
        const std::string& op = t.name;
        if (op == "+") return Add(a, b);
        if (op == "-") return Sub(a, b);
        if (op == "*") return Mul(a, b);
        if (op == "/") return Div(a, b);
        if (op == "%") return Mod(a, b);
        if (op == "==") return Eq(a, b);
        if (op == "!=") return Ne(a, b);
        if (op == "<") return Lt(a, b);
        if (op == "<=") return Le(a, b);
        if (op == ">") return Lt(b, a);
        if (op == ">=") return Le(b, a);
        if (op == "&&") return And(a, b);
        return Or(a, b);
      }
      case Term::Kind::kList:
        return Const(0);
    }
    return Const(0);
  }

  Expr Size(const std::string& name) {
    auto it = sizes_.find(name);
    return it != sizes_.end() ? it->second : Const(1);
  }

  // table(E): E evaluated on every device of the concrete mesh, read by partition id.
  Expr TableOf(const Term& t, const Device& d) {
    NeedConcrete(t.line, "table(...)");
    if (Symbolic()) return Const(0);
    const std::vector<int64_t>& sizes = concrete_sizes_;
    std::vector<int64_t> values;
    for (const std::vector<int64_t>& c : AllCoords(sizes)) {
      Device at;
      for (int64_t x : c) at.push_back(Const(x));
      absl::StatusOr<int64_t> v = EvalInt(Int(*t.args[0], &at), Env());
      values.push_back(v.ok() ? *v : 0);
    }
    return Table(mesh().Id(d), values);
  }

  std::vector<int> Axes(const std::vector<TermP>& args) const {
    std::vector<int> axes;
    for (const TermP& a : args) axes.push_back(MeshAxis(a->name));
    return axes;
  }

  static std::vector<std::vector<int64_t>> AllCoords(const std::vector<int64_t>& sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    std::vector<std::vector<int64_t>> all;
    for (int64_t id = 0; id < n; ++id) {
      std::vector<int64_t> c(sizes.size());
      int64_t rest = id;
      for (size_t k = sizes.size(); k-- > 0;) {
        c[k] = rest % sizes[k];
        rest /= sizes[k];
      }
      all.push_back(c);
    }
    return all;
  }
  static Device ConstDevice(const std::vector<int64_t>& c) {
    Device d;
    for (int64_t x : c) d.push_back(Const(x));
    return d;
  }
  int64_t IdOf(const Device& d) {
    absl::StatusOr<int64_t> v = EvalInt(mesh().Id(d), Env());
    return v.ok() ? *v : -1;
  }

  // ---- groups and pairs

  Groups MakeGroups(const Term& t) {
    if (t.kind == Term::Kind::kCall && t.name == "axes") return AxisGroups(mesh(), Axes(t.args));
    NeedConcrete(t.line, "explicit or relabelled groups");
    if (Symbolic()) return AxisGroups(mesh(), {});
    return ExplicitGroups(mesh(), GroupList(t));
  }

  std::vector<std::vector<int64_t>> GroupList(const Term& t) {
    std::vector<std::vector<int64_t>> groups;
    if (t.kind == Term::Kind::kList) {
      for (const TermP& g : t.args) {
        std::vector<int64_t> members;
        for (const TermP& m : g->args) members.push_back(m->value);
        groups.push_back(members);
      }
      return groups;
    }
    if (t.kind == Term::Kind::kCall && t.name == "axes") {
      const Groups g = AxisGroups(mesh(), Axes(t.args));
      std::map<int64_t, std::vector<int64_t>> by_first;
      for (const std::vector<int64_t>& c : AllCoords(concrete_sizes_)) {
        const Device d = ConstDevice(c);
        const int64_t first = IdOf(g.member(d, Const(0)));
        if (by_first.count(first)) continue;
        int64_t size = 0;
        IsConst(g.size, &size);
        std::vector<int64_t> members;
        for (int64_t p = 0; p < size; ++p) members.push_back(IdOf(g.member(d, Const(p))));
        by_first[first] = members;
      }
      for (auto& [first, members] : by_first) groups.push_back(members);
      return groups;
    }
    // relabel(G, sources(P)) / relabel(G, targets(P)).
    groups = GroupList(*t.args[0]);
    const Term& how = *t.args[1];
    const PairList pairs = PairsList(*how.args[0]);
    std::map<int64_t, int64_t> source_of, target_of;
    for (const auto& [s, tt] : pairs) {
      source_of[tt] = s;
      target_of[s] = tt;
    }
    for (std::vector<int64_t>& g : groups) {
      for (int64_t& m : g) {
        const std::map<int64_t, int64_t>& by = how.name == "sources" ? source_of : target_of;
        auto it = by.find(m);
        if (it != by.end()) m = it->second;
      }
    }
    return groups;
  }

  Pairs MakePairs(const Term& t) {
    if (t.kind == Term::Kind::kCall && t.name == "shift") return Shift(t);
    if (t.kind == Term::Kind::kCall && t.name == "edge") {
      const int a = MeshAxis(t.args[0]->name);
      const Expr from = Int(*t.args[1], nullptr);
      const Expr to = Int(*t.args[2], nullptr);
      Pairs p;
      p.has_source = [a, to](const Device& d) { return Eq(d[a], to); };
      p.source = [a, from](const Device& d) {
        Device s = d;
        s[a] = from;
        return s;
      };
      p.text = "edge";
      return p;
    }
    NeedConcrete(t.line, "explicit, reflected or composed pairs");
    if (Symbolic()) return ShiftPairs(mesh(), 0, 0, true);
    return ExplicitPairs(mesh(), PairsList(t));
  }

  // shift(a, k[, b, k2, ...][, open]): every device sends to the one k further along a (and k2
  // along b); `open`: devices past the end send nothing, else cyclic.
  Pairs Shift(const Term& t) {
    bool cyclic = true;
    std::vector<std::pair<int, Expr>> moves;
    for (size_t i = 0; i < t.args.size(); ++i) {
      if (t.args[i]->kind == Term::Kind::kName && t.args[i]->name == "open") {
        cyclic = false;
        continue;
      }
      const int a = MeshAxis(t.args[i]->name);
      const Expr k = Int(*t.args[i + 1], nullptr);
      moves.push_back({a, k});
      ++i;
    }
    int64_t k = 0;
    if (moves.size() == 1 && IsConst(moves[0].second, &k)) {
      return ShiftPairs(mesh(), moves[0].first, k, cyclic);
    }
    const MeshModel m = mesh();
    Pairs p;
    p.has_source = [moves, m, cyclic](const Device& d) {
      Expr all = Bool(true);
      if (cyclic) return all;
      for (const auto& [a, k] : moves) all = And(all, InRange(Sub(d[a], k), Const(0), m.sizes[a]));
      return all;
    };
    p.source = [moves, m, cyclic](const Device& d) {
      Device s = d;
      for (const auto& [a, k] : moves) {
        s[a] = cyclic ? Mod(Add(Sub(d[a], k), m.sizes[a]), m.sizes[a]) : Sub(d[a], k);
      }
      return s;
    };
    p.text = "shift";
    return p;
  }

  // The pairs as an explicit {source, target} list on the concrete mesh.
  PairList PairsList(const Term& t) {
    if (t.kind == Term::Kind::kList) {
      PairList pairs;
      for (const TermP& pair : t.args)
        pairs.push_back({pair->args[0]->value, pair->args[1]->value});
      return pairs;
    }
    if (t.kind == Term::Kind::kCall && t.name == "compose") {
      return ComposePairs(PairsList(*t.args[0]), PairsList(*t.args[1]));
    }
    const std::vector<int64_t>& sizes = concrete_sizes_;
    PairList pairs;
    if (t.kind == Term::Kind::kCall && t.name == "reflect") {
      const int a = MeshAxis(t.args[0]->name);
      for (const std::vector<int64_t>& c : AllCoords(sizes)) {
        std::vector<int64_t> target = c;
        target[a] = sizes[a] - 1 - c[a];
        pairs.push_back({IdOf(ConstDevice(c)), IdOf(ConstDevice(target))});
      }
      return pairs;
    }
    const Pairs p = MakePairs(t);
    for (const std::vector<int64_t>& c : AllCoords(sizes)) {
      const Device d = ConstDevice(c);
      absl::StatusOr<int64_t> has = EvalInt(p.has_source(d), Env());
      if (!has.ok() || *has == 0) continue;
      pairs.push_back({IdOf(p.source(d)), IdOf(d)});
    }
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  }

  // ---- ops

  static Dist Concatenate(const Dist& a, const Dist& b, int dim) {
    Dist out;
    out.error = a.error.empty() ? b.error : a.error;
    out.shape = a.shape;
    out.shape[dim] = Add(a.shape[dim], b.shape[dim]);
    out.at = [a, b, dim](const Device& d, const Index& i) {
      const Expr n = a.shape[dim];
      Index j = i;
      j[dim] = Sub(i[dim], n);
      return Ite(Lt(i[dim], n), a.at(d, i), b.at(d, j));
    };
    return out;
  }

  int64_t AttrInt(const Statement& s, const std::string& key) {
    auto it = s.attrs.find(key);
    if (it == s.attrs.end() || it->second == nullptr) return -1;
    const Term& t = *it->second;
    if (t.kind == Term::Kind::kList) return t.args.empty() ? -1 : t.args[0]->value;
    return t.value;
  }
  std::vector<int> AttrInts(const Statement& s, const std::string& key) {
    std::vector<int> out;
    auto it = s.attrs.find(key);
    if (it == s.attrs.end() || it->second == nullptr) return out;
    for (const TermP& x : it->second->args) out.push_back(static_cast<int>(x->value));
    return out;
  }
  const Term* Attr(const Statement& s, const std::string& key) {
    auto it = s.attrs.find(key);
    return it == s.attrs.end() ? nullptr : it->second.get();
  }
  std::vector<Expr> Dims(const Statement& s) {
    std::vector<Expr> dims;
    for (const TermP& d : s.dims) dims.push_back(Int(*d, nullptr));
    return dims;
  }

  Dist Op(const Statement& s, std::map<std::string, Dist>& values) {
    std::vector<Dist> in;
    for (const std::string& name : s.operands) in.push_back(values.at(name));
    const std::string& op = s.opcode;
    Dist out;
    if (op == "parameter") {
      out = s.attrs.count("replicated")
                ? ReplicatedInput(static_cast<int>(s.number), Dims(s))
                : InputValue(static_cast<int>(s.number), mesh().rank(), Dims(s));
    } else if (op == "constant") {
      out = Zeros(Dims(s));
    } else if (op == "copy") {
      out = in[0];
    } else if (op == "all-gather") {
      out = AllGather(in[0], MakeGroups(*Attr(s, "replica_groups")), AttrInt(s, "dimensions"));
    } else if (op == "all-reduce") {
      out = AllReduce(in[0], MakeGroups(*Attr(s, "replica_groups")));
    } else if (op == "reduce-scatter") {
      out = ReduceScatter(in[0], MakeGroups(*Attr(s, "replica_groups")), AttrInt(s, "dimensions"));
    } else if (op == "all-to-all") {
      int split = AttrInt(s, "split_dimension"), concat = AttrInt(s, "concat_dimension");
      if (split < 0) split = concat = AttrInt(s, "dimensions");
      out = AllToAll(in[0], MakeGroups(*Attr(s, "replica_groups")), split, concat);
    } else if (op == "collective-permute") {
      out = CollectivePermute(in[0], MakePairs(*Attr(s, "source_target_pairs")));
    } else if (op == "collective-broadcast") {
      out = CollectiveBroadcast(in[0], MakeGroups(*Attr(s, "replica_groups")));
    } else if (op == "add") {
      out = Plus(in[0], in[1]);
    } else if (op == "concatenate") {
      out = Concatenate(in[0], in[1], AttrInt(s, "dimensions"));
    } else if (op == "multiply") {
      out = Scale(in[0], Int(*Attr(s, "by")->args[0], nullptr));
    } else if (op == "select") {
      const TermP mask = s.attrs.at("mask")->args[0];
      std::shared_ptr<Interpreter> self = shared_from_this();
      out = Select([self, mask](const Device& d) { return self->Int(*mask, &d); }, in[0], in[1]);
    } else if (op == "dynamic-slice") {
      out = in[0];
      const Term& offsets = *Attr(s, "offsets");
      const std::vector<Expr> sizes = Dims(s);
      for (size_t k = 0; k < offsets.args.size(); ++k) {
        const TermP o = offsets.args[k];
        if (o->kind == Term::Kind::kNum && o->value == 0 && Same(sizes[k], out.shape[k])) continue;
        std::shared_ptr<Interpreter> self = shared_from_this();
        out = DynamicSlice(
            out, static_cast<int>(k), [self, o](const Device& d) { return self->Int(*o, &d); },
            sizes[k]);
      }
    } else if (op == "dynamic-update-slice") {
      out = in[0];
      const Term& offsets = *Attr(s, "offsets");
      for (size_t k = 0; k < offsets.args.size(); ++k) {
        const TermP o = offsets.args[k];
        if (o->kind == Term::Kind::kNum && o->value == 0 && Same(in[1].shape[k], out.shape[k])) {
          continue;
        }
        std::shared_ptr<Interpreter> self = shared_from_this();
        out = DynamicUpdateSlice(out, in[1], static_cast<int>(k),
                                 [self, o](const Device& d) { return self->Int(*o, &d); });
      }
    } else if (op == "reshape") {
      out = Reshape(in[0], Dims(s));
    } else if (op == "transpose") {
      out = Transpose(in[0], AttrInts(s, "dimensions"));
    } else if (op == "broadcast") {
      out = Broadcast(in[0], Dims(s), AttrInts(s, "dimensions"));
    }
    // On a concrete mesh, the declared shape must be what the op gives.
    if (!Symbolic() && error_.empty()) {
      const std::vector<Expr> declared = Dims(s);
      bool same = declared.size() == out.shape.size();
      std::vector<std::string> want, got;
      for (size_t k = 0; k < std::max(declared.size(), out.shape.size()); ++k) {
        absl::StatusOr<int64_t> w =
            k < declared.size() ? EvalInt(declared[k], Env()) : absl::StatusOr<int64_t>(-1);
        absl::StatusOr<int64_t> g =
            k < out.shape.size() ? EvalInt(out.shape[k], Env()) : absl::StatusOr<int64_t>(-1);
        want.push_back(w.ok() ? absl::StrCat(*w) : "?");
        got.push_back(g.ok() ? absl::StrCat(*g) : "?");
        same &= w.ok() && g.ok() && *w == *g;
      }
      if (!same) {
        Error(s, absl::StrCat(s.name, " is declared [", absl::StrJoin(want, ","), "] but ", op,
                              " gives [", absl::StrJoin(got, ","), "]"));
      }
    }
    return out;
  }

  std::shared_ptr<const RuleText> rule_;
  MeshModel mesh_;
  std::vector<int> axes_;
  bool symbolic_;
  std::vector<int64_t> concrete_sizes_;
  std::map<std::string, Expr> sizes_;
  std::map<std::string, int> axis_;
  std::string error_;
};

// ------------------------------------------------------------------------------ validation

const std::set<std::string>& KnownOps() {
  static const std::set<std::string> ops = {"parameter",
                                            "constant",
                                            "copy",
                                            "all-gather",
                                            "all-reduce",
                                            "reduce-scatter",
                                            "all-to-all",
                                            "collective-permute",
                                            "collective-broadcast",
                                            "add",
                                            "multiply",
                                            "select",
                                            "dynamic-slice",
                                            "dynamic-update-slice",
                                            "reshape",
                                            "transpose",
                                            "broadcast",
                                            "concatenate"};
  return ops;
}

class Validator {
 public:
  Validator(const std::string& path, const RuleText& rule) : path_(path), rule_(rule) {
    for (const std::string& a : rule.axes) axes_.insert(a);
    for (const auto& [n, v] : rule.sizes) sizes_.insert(n);
  }
  bool parametric() const { return parametric_; }

  void Side(const std::vector<Statement>& side, const char* which, int line) {
    std::set<std::string> defined;
    int roots = 0;
    for (const Statement& s : side) {
      if (!KnownOps().count(s.opcode)) Fail(s.line, absl::StrCat("unknown op '", s.opcode, "'"));
      if (defined.count(s.name)) Fail(s.line, absl::StrCat("'", s.name, "' is defined twice"));
      for (const std::string& o : s.operands) {
        if (!defined.count(o)) Fail(s.line, absl::StrCat("'", o, "' is not defined before"));
      }
      const size_t want = Arity(s.opcode);
      if (s.operands.size() != want && s.opcode != "parameter" && s.opcode != "constant") {
        Fail(s.line, absl::StrCat(s.opcode, " takes ", want, " operand(s)"));
      }
      defined.insert(s.name);
      roots += s.root ? 1 : 0;
      for (const TermP& d : s.dims) Check(*d, /*device=*/false);
      Require(s);
      for (const auto& [key, value] : s.attrs) {
        if (value != nullptr) Check(*value, key == "mask" || key == "offsets");
      }
      if (s.opcode == "all-reduce" || s.opcode == "reduce-scatter") parametric_ = false;
      if (s.opcode == "constant" && s.number != 0) Fail(s.line, "only constant(0) is supported");
    }
    if (roots != 1) Fail(line, absl::StrCat(which, " needs exactly one ROOT"));
  }

 private:
  [[noreturn]] void Fail(int line, const std::string& message) {
    throw ParseError(path_, line, 1, message);
  }
  static size_t Arity(const std::string& op) {
    if (op == "add" || op == "select" || op == "dynamic-update-slice" || op == "concatenate") {
      return 2;
    }
    return 1;
  }
  void Need(const Statement& s, const std::string& key) {
    if (!s.attrs.count(key) || s.attrs.at(key) == nullptr) {
      Fail(s.line, absl::StrCat(s.opcode, " needs ", key, "=..."));
    }
  }
  void Require(const Statement& s) {
    const std::string& op = s.opcode;
    if (op == "all-gather" || op == "reduce-scatter") {
      Need(s, "dimensions");
      Need(s, "replica_groups");
    } else if (op == "all-reduce" || op == "collective-broadcast") {
      Need(s, "replica_groups");
    } else if (op == "all-to-all") {
      Need(s, "replica_groups");
      if (!s.attrs.count("dimensions")) {
        Need(s, "split_dimension");
        Need(s, "concat_dimension");
      }
    } else if (op == "collective-permute") {
      Need(s, "source_target_pairs");
    } else if (op == "select") {
      Need(s, "mask");
    } else if (op == "multiply") {
      Need(s, "by");
    } else if (op == "dynamic-slice" || op == "dynamic-update-slice") {
      Need(s, "offsets");
    } else if (op == "transpose" || op == "broadcast" || op == "concatenate") {
      Need(s, "dimensions");
    }
  }
  void Check(const Term& t, bool device) {
    switch (t.kind) {
      case Term::Kind::kNum:
        return;
      case Term::Kind::kName:
        if (axes_.count(t.name) || sizes_.count(t.name) || t.name == "open") return;
        if (t.name == "pid" && device) return;
        throw ParseError(
            path_, t.line, t.col,
            absl::StrCat("unknown name '", t.name, "' (axes: ", absl::StrJoin(rule_.axes, ", "),
                         "; sizes: ", absl::StrJoin(sizes_, ", "), ")"));
      case Term::Kind::kCall: {
        static const std::set<std::string> device_calls = {"pos", "coord", "table"};
        static const std::set<std::string> calls = {"axes",    "shift",   "edge",    "reflect",
                                                    "compose", "relabel", "sources", "targets"};
        if (device_calls.count(t.name)) {
          if (!device) {
            throw ParseError(path_, t.line, t.col,
                             absl::StrCat(t.name,
                                          "(...) depends on the device: only in offsets "
                                          "and masks"));
          }
        } else if (!calls.count(t.name)) {
          throw ParseError(path_, t.line, t.col, absl::StrCat("unknown function '", t.name, "'"));
        }
        if (t.name == "table" || t.name == "reflect" || t.name == "compose" ||
            t.name == "relabel") {
          parametric_ = false;
        }
        if (t.name == "pos" || t.name == "axes" || t.name == "coord" || t.name == "reflect") {
          for (const TermP& a : t.args) {
            if (a->kind != Term::Kind::kName || !axes_.count(a->name)) {
              throw ParseError(path_, a->line, a->col,
                               absl::StrCat(t.name, "(...) takes axis names"));
            }
          }
          return;
        }
        for (const TermP& a : t.args) Check(*a, device);
        return;
      }
      case Term::Kind::kList:
        parametric_ = parametric_ && !t.args.empty() && t.args[0]->kind != Term::Kind::kList;
        for (const TermP& a : t.args) Check(*a, device);
        return;
      case Term::Kind::kUnary:
      case Term::Kind::kBinary:
        for (const TermP& a : t.args) Check(*a, device);
        return;
    }
  }

  std::string path_;
  const RuleText& rule_;
  std::set<std::string> axes_;
  std::set<std::string> sizes_;
  bool parametric_ = true;
};

RuleDef MakeRule(std::shared_ptr<const RuleText> rule, bool parametric) {
  RuleDef def;
  def.name = rule->name;
  def.summary = rule->summary;
  def.xla_pass = rule->xla_pass;
  def.sound = rule->sound;
  def.num_axes = static_cast<int>(rule->axes.size());
  def.parametric = parametric;
  def.source = rule->source;
  if (rule->min_mesh_rank > 0) {
    const int64_t min_rank = rule->min_mesh_rank;
    def.applies = [min_rank](const std::vector<int64_t>& mesh, const std::vector<int>&) {
      return static_cast<int64_t>(mesh.size()) >= min_rank;
    };
  }
  def.build = [rule = std::move(rule)](RuleContext& ctx) {
    // One term per size name, shared by both sides.
    std::map<std::string, Expr> sizes;
    for (const auto& [name, value] : rule->sizes) sizes[name] = ctx.Size(name, value);
    auto lhs = std::make_shared<Interpreter>(rule, ctx, sizes);
    auto rhs = std::make_shared<Interpreter>(rule, ctx, sizes);
    return RuleSides{lhs->Side(rule->lhs), rhs->Side(rule->rhs)};
  };
  return def;
}

}  // namespace

absl::StatusOr<std::vector<RuleDef>> ParseRules(absl::string_view text, absl::string_view path) {
  const std::string file(path);
  std::vector<RuleDef> rules;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  try {
    std::shared_ptr<RuleText> rule;
    std::vector<Statement>* block = nullptr;
    int block_line = 0;
    std::set<std::string> names;
    auto finish = [&](int line) {
      if (rule == nullptr) return;
      // The source ends at the rule's last statement or directive (not at the comments and blank
      // lines before the next rule).
      std::vector<absl::string_view> kept = absl::StrSplit(rule->source, '\n');
      while (!kept.empty() &&
             StripComment(kept.back()).find_first_not_of(" \t") == absl::string_view::npos) {
        kept.pop_back();
      }
      rule->source = absl::StrCat(absl::StrJoin(kept, "\n"), "\n");
      if (rule->lhs.empty() || rule->rhs.empty()) {
        throw ParseError(file, line, 1, absl::StrCat("rule ", rule->name, " needs lhs and rhs"));
      }
      Validator validator(file, *rule);
      validator.Side(rule->lhs, "lhs", rule->line);
      validator.Side(rule->rhs, "rhs", rule->line);
      rules.push_back(MakeRule(rule, validator.parametric()));
      rule = nullptr;
    };
    for (size_t i = 0; i < lines.size(); ++i) {
      const int line = static_cast<int>(i) + 1;
      const absl::string_view content = StripComment(lines[i]);
      LineParser p(file, line, content);
      if (p.AtEnd()) {
        if (rule != nullptr) absl::StrAppend(&rule->source, lines[i], "\n");
        continue;
      }
      const bool starts_rule =
          block == nullptr && (content.substr(0, 5) == "rule " ||
                               absl::StripLeadingAsciiWhitespace(content).substr(0, 5) == "rule ");
      if (rule != nullptr && !starts_rule) absl::StrAppend(&rule->source, lines[i], "\n");
      if (block != nullptr) {
        if (p.TryConsume("}")) {
          block = nullptr;
          continue;
        }
        block->push_back(ParseStatement(p, line));
        continue;
      }
      const std::string word = p.HloName();
      if (word == "rule") {
        finish(line);
        rule = std::make_shared<RuleText>();
        rule->line = line;
        rule->name = p.HloName();
        if (!names.insert(rule->name).second) p.Fail(absl::StrCat("rule ", rule->name, " twice"));
        rule->source = absl::StrCat(lines[i], "\n");
        continue;
      }
      if (rule == nullptr) {
        p.Rewind();
        p.Fail("expected `rule NAME`");
      }
      if (word == "summary") {
        rule->summary = p.Quoted();
      } else if (word == "xla-pass") {
        rule->xla_pass = p.Quoted();
      } else if (word == "expect") {
        const std::string e = p.HloName();
        if (e != "sound" && e != "wrong") p.Fail("expect sound or expect wrong");
        rule->sound = e == "sound";
      } else if (word == "axes") {
        do {
          rule->axes.push_back(p.Ident());
        } while (p.TryConsume(","));
      } else if (word == "sizes") {
        do {
          const std::string name = p.Ident();
          p.Expect("=", "and the size's value on enumerated meshes");
          rule->sizes.push_back({name, p.Number()});
        } while (p.TryConsume(","));
      } else if (word == "requires") {
        p.Expect("mesh-rank", "(the only requirement)");
        p.Expect(">=", "after mesh-rank");
        rule->min_mesh_rank = p.Number();
      } else if (word == "lhs" || word == "rhs") {
        p.Expect("{", "to open the fragment");
        block = word == "lhs" ? &rule->lhs : &rule->rhs;
        block_line = line;
        continue;
      } else {
        p.Rewind();
        p.Fail(absl::StrCat("unknown directive '", word, "'"));
      }
      if (!p.AtEnd()) p.Fail("unexpected text");
    }
    if (block != nullptr) {
      throw ParseError(file, block_line, 1, "the fragment is not closed with `}`");
    }
    finish(static_cast<int>(lines.size()));
  } catch (const ParseError& e) {
    return e.status();
  }
  if (rules.empty()) return absl::InvalidArgumentError(absl::StrCat(file, ": no rule"));
  return rules;
}

}  // namespace spmdcheck::smt::rw
