#include "parser.h"

#include <set>

#include "checked.h"
#include "error.h"
#include "lexer.h"

namespace cusyncgen {
namespace {

// Index variables of a stage: i (row tile), j (column tile) and its walk.
constexpr const char* kRowVar = "i";
constexpr const char* kColVar = "j";

// How deeply expressions may nest (parentheses, unary minus, calls). The
// parser recurses per level, so a limit keeps a hostile spec from
// exhausting the stack; real specs nest a handful of levels.
constexpr int kMaxNesting = 256;

class Parser {
 public:
  Parser(const std::string& text, const std::string& file, const std::map<std::string, int64_t>& overrides)
      : toks_(lex(text)), overrides_(overrides) {
    spec_.file = file;
  }

  Spec run() {
    while (peek().kind != Tok::End) {
      if (peek().kind == Tok::Newline) {
        next();
        continue;
      }
      statement();
      endOfLine();
    }
    return spec_;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  const Token& next() { return toks_[pos_++]; }
  bool isPunct(const char* p) const { return peek().kind == Tok::Punct && peek().text == p; }

  [[noreturn]] void fail(const Token& t, const std::string& msg) const { throw SpecError(t.loc, msg); }

  void expectPunct(const char* p) {
    if (!isPunct(p)) fail(peek(), std::string("expected '") + p + "' but found '" + peek().text + "'");
    next();
  }
  const Token& expectIdent(const char* what) {
    if (peek().kind != Tok::Ident) fail(peek(), std::string("expected ") + what + " but found '" + peek().text + "'");
    return next();
  }
  void endOfLine() {
    if (peek().kind != Tok::Newline) fail(peek(), "unexpected '" + peek().text + "' at the end of the statement");
    next();
  }

  void checkFresh(const Token& name) {
    if (name.text == kRowVar || name.text == kColVar) fail(name, "'" + name.text + "' is reserved for tile indices");
    if (spec_.params.count(name.text) || spec_.findTensor(name.text) >= 0 || spec_.findStage(name.text) >= 0)
      fail(name, "'" + name.text + "' is already defined");
  }

  StageDecl& currentStage(const Token& kw) {
    if (spec_.stages.empty()) fail(kw, "'" + kw.text + "' must follow a 'stage' line");
    return spec_.stages.back();
  }

  void statement() {
    const Token& kw = expectIdent("a statement (param, tensor, stage, output, writes, walk, reads, sync, order)");
    if (kw.text == "param") return param();
    if (kw.text == "tensor") return tensor(-1);
    if (kw.text == "stage") return stage();
    if (kw.text == "output") {
      StageDecl& s = currentStage(kw);
      if (s.output >= 0) fail(kw, "stage '" + s.name + "' already has an output");
      tensor(int(spec_.stages.size()) - 1);
      s.output = int(spec_.tensors.size()) - 1;
      return;
    }
    if (kw.text == "writes") return writes(currentStage(kw), kw);
    if (kw.text == "walk") return walk(currentStage(kw), kw);
    if (kw.text == "reads") return reads(currentStage(kw));
    if (kw.text == "sync") return sync(currentStage(kw));
    if (kw.text == "order") return order(currentStage(kw));
    fail(kw, "unknown statement '" + kw.text + "'");
  }

  void param() {
    const Token& name = expectIdent("a parameter name");
    checkFresh(name);
    expectPunct("=");
    spec_.params[name.text] = constant();
    if (auto it = overrides_.find(name.text); it != overrides_.end()) spec_.params[name.text] = it->second;
  }

  void tensor(int producer) {
    const Token& name = expectIdent("a tensor name");
    checkFresh(name);
    TensorDecl t;
    t.name = name.text;
    t.loc = name.loc;
    t.producer = producer;
    expectPunct("[");
    t.rows = positive("tensor rows");
    expectPunct(",");
    t.cols = positive("tensor columns");
    expectPunct("]");
    spec_.tensors.push_back(t);
  }

  // grid(x, y[, z]) or tile(x, y[, z]).
  void dims(const char* word, int64_t (&d)[3], Loc& loc) {
    const Token& kw = expectIdent(word);
    if (kw.text != word) fail(kw, std::string("expected '") + word + "(...)' but found '" + kw.text + "'");
    loc = kw.loc;
    expectPunct("(");
    d[0] = positive(word);
    expectPunct(",");
    d[1] = positive(word);
    d[2] = 1;
    if (isPunct(",")) {
      next();
      d[2] = positive(word);
    }
    expectPunct(")");
  }

  void stage() {
    const Token& name = expectIdent("a stage name");
    checkFresh(name);
    StageDecl s;
    s.name = name.text;
    s.loc = name.loc;
    dims("grid", s.grid, s.gridLoc);
    dims("tile", s.tile, s.tileLoc);
    spec_.stages.push_back(s);
  }

  void writes(StageDecl& s, const Token& kw) {
    if (s.hasWrites) fail(kw, "stage '" + s.name + "' already has a writes line");
    s.writes = access({kRowVar, kColVar});
    s.hasWrites = true;
  }

  void walk(StageDecl& s, const Token& kw) {
    if (!s.walk.empty()) fail(kw, "stage '" + s.name + "' already has a walk");
    while (true) {
      const Token& v = expectIdent("a walk variable");
      checkFresh(v);
      for (const WalkVar& w : s.walk)
        if (w.name == v.text) fail(v, "walk variable '" + v.text + "' given twice");
      expectPunct("<");
      s.walk.push_back({v.text, positive("walk extent"), v.loc});
      if (!isPunct(",")) break;
      next();
    }
  }

  void reads(StageDecl& s) {
    std::set<std::string> vars{kRowVar, kColVar};
    for (const WalkVar& w : s.walk) vars.insert(w.name);
    Access a = access(vars);
    if (peek().kind == Tok::Ident && peek().text == "padded") {
      next();
      a.padded = true;
    }
    s.reads.push_back(a);
  }

  void sync(StageDecl& s) {
    SyncReq r;
    const Token& t = expectIdent("the name of a tensor the stage reads");
    r.tensor = t.text;
    r.loc = t.loc;
    const Token& k = expectIdent("a granularity (tile, row, rows(G), strided, auto)");
    if (k.text == "tile") r.kind = SyncKind::Tile;
    else if (k.text == "row") r.kind = SyncKind::Row;
    else if (k.text == "strided") r.kind = SyncKind::Strided;
    else if (k.text == "auto") r.kind = SyncKind::Auto;
    else if (k.text == "rows") {
      r.kind = SyncKind::Rows;
      expectPunct("(");
      r.group = positive("rows per semaphore");
      expectPunct(")");
    } else {
      fail(k, "unknown granularity '" + k.text + "' (expected tile, row, rows(G), strided or auto)");
    }
    for (const SyncReq& o : s.syncs)
      if (o.tensor == r.tensor) fail(t, "granularity for '" + r.tensor + "' given twice");
    s.syncs.push_back(r);
  }

  void order(StageDecl& s) {
    const Token& k = expectIdent("row_major or column_major");
    if (k.text == "row_major") s.columnMajor = false;
    else if (k.text == "column_major") s.columnMajor = true;
    else fail(k, "unknown order '" + k.text + "' (expected row_major or column_major)");
  }

  // NAME[lo : hi, lo : hi]
  Access access(const std::set<std::string>& vars) {
    const Token& name = expectIdent("a tensor name");
    Access a;
    a.tensor = name.text;
    a.loc = name.loc;
    if (spec_.findTensor(name.text) < 0) fail(name, "unknown tensor '" + name.text + "'");
    expectPunct("[");
    a.rows = range(vars);
    expectPunct(",");
    a.cols = range(vars);
    expectPunct("]");
    return a;
  }

  Range range(const std::set<std::string>& vars) {
    Range r;
    r.loc = peek().loc;
    r.lo = expr(vars);
    expectPunct(":");
    r.hi = expr(vars);
    return r;
  }

  // No index variables are in scope, so the expression folds to a number.
  int64_t constant() { return expr({}).c; }

  int64_t positive(const char* what) {
    const Token& at = peek();
    const int64_t v = constant();
    if (v <= 0) fail(at, std::string(what) + " must be positive, got " + std::to_string(v));
    return v;
  }

  // Affine expressions over `vars`; anything else is folded to a constant.
  Affine expr(const std::set<std::string>& vars) {
    Affine a = term(vars);
    while (isPunct("+") || isPunct("-")) {
      const Token& op = next();
      Affine b = term(vars);
      a = add(a, b, op.text == "-", op.loc);
    }
    return a;
  }

  // a + b, or a - b where `minus`.
  static Affine add(Affine a, const Affine& b, bool minus, Loc at) {
    a.c = minus ? checkedSub(a.c, b.c, at) : checkedAdd(a.c, b.c, at);
    for (const auto& [v, k] : b.coef) {
      int64_t& x = a.coef[v];
      x = minus ? checkedSub(x, k, at) : checkedAdd(x, k, at);
      if (x == 0) a.coef.erase(v);
    }
    return a;
  }

  static Affine scale(Affine a, int64_t k, Loc at) {
    a.c = checkedMul(a.c, k, at);
    for (auto it = a.coef.begin(); it != a.coef.end();) {
      it->second = checkedMul(it->second, k, at);
      it = it->second == 0 ? a.coef.erase(it) : std::next(it);
    }
    return a;
  }

  static std::string firstVar(const Affine& a) { return a.coef.begin()->first; }

  Affine term(const std::set<std::string>& vars) {
    Affine a = unary(vars);
    while (isPunct("*") || isPunct("/")) {
      const Token& op = next();
      Affine b = unary(vars);
      if (op.text == "*") {
        if (!a.isConstant() && !b.isConstant())
          fail(op, "non-affine expression: product of '" + firstVar(a) + "' and '" + firstVar(b) + "'");
        a = a.isConstant() ? scale(b, a.c, op.loc) : scale(a, b.c, op.loc);
      } else {
        if (!b.isConstant()) fail(op, "non-affine expression: division by '" + firstVar(b) + "'");
        if (!a.isConstant()) fail(op, "non-affine expression: division of '" + firstVar(a) + "' (write the bound as a product)");
        if (b.c == 0) fail(op, "division by zero");
        if (b.c == -1) a.c = checkedMul(a.c, -1, op.loc);  // the one quotient that can overflow
        else a.c = a.c / b.c;
      }
    }
    return a;
  }

  Affine unary(const std::set<std::string>& vars) {
    if (++depth_ > kMaxNesting)
      fail(peek(), "expression nested too deeply (more than " + std::to_string(kMaxNesting) +
                       " levels of parentheses, unary minus or calls)");
    Affine a;
    if (isPunct("-")) {
      const Token& op = next();
      a = scale(unary(vars), -1, op.loc);
    } else {
      a = primary(vars);
    }
    --depth_;
    return a;
  }

  Affine primary(const std::set<std::string>& vars) {
    const Token& t = next();
    Affine a;
    if (t.kind == Tok::Number) {
      a.c = t.value;
      return a;
    }
    if (t.kind == Tok::Punct && t.text == "(") {
      a = expr(vars);
      expectPunct(")");
      return a;
    }
    if (t.kind != Tok::Ident) fail(t, "expected a number, a name or '(' but found '" + t.text + "'");
    if (isPunct("(")) return call(t, vars);
    if (auto it = spec_.params.find(t.text); it != spec_.params.end()) {
      a.c = it->second;
      return a;
    }
    if (vars.count(t.text)) {
      a.coef[t.text] = 1;
      return a;
    }
    if (t.text == kRowVar || t.text == kColVar)
      fail(t, "tile index '" + t.text + "' cannot be used here (only in writes and reads)");
    fail(t, "unknown name '" + t.text + "'");
  }

  // cdiv(a, b), min(a, b), max(a, b) on constants.
  Affine call(const Token& fn, const std::set<std::string>& vars) {
    expectPunct("(");
    const Token& at = peek();
    Affine x = expr(vars);
    expectPunct(",");
    Affine y = expr(vars);
    expectPunct(")");
    if (!x.isConstant() || !y.isConstant()) fail(at, "non-affine expression: " + fn.text + "() of an index variable");
    Affine r;
    if (fn.text == "cdiv") {
      if (y.c <= 0) fail(at, "cdiv by a non-positive number");
      r.c = x.c >= 0 ? x.c / y.c + (x.c % y.c != 0) : x.c / y.c;  // the ceiling, without x + y - 1 overflowing
    } else if (fn.text == "min") {
      r.c = std::min(x.c, y.c);
    } else if (fn.text == "max") {
      r.c = std::max(x.c, y.c);
    } else {
      fail(fn, "unknown function '" + fn.text + "' (known: cdiv, min, max)");
    }
    return r;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::map<std::string, int64_t> overrides_;
  Spec spec_;
};

}  // namespace

Spec parseSpec(const std::string& text, const std::string& file, const std::map<std::string, int64_t>& overrides) {
  Spec spec = Parser(text, file, overrides).run();
  for (const auto& [name, value] : overrides)
    if (!spec.params.count(name)) throw SpecError({1, 1}, "--set names '" + name + "', which is not a param of the spec");
  return spec;
}

}  // namespace cusyncgen
