#include "emit.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace cusyncgen {
namespace {

std::string rulesInit(const cusyncgen_rt::Rules& R) {
  std::ostringstream o;
  o << "cusyncgen_rt::Rules{" << (R.grain == cusyncgen_rt::kRows ? "cusyncgen_rt::kRows" : "cusyncgen_rt::kTile")
    << ", " << R.rowsPerSem << "u, " << R.bk << "u, " << R.steps << "u, " << R.inner << "u, " << R.colA << ", "
    << R.colB << ", " << R.colLen << "u, " << R.rowA << ", " << R.rowLo << ", " << R.rowHi << ", " << R.count << "u, "
    << R.stride << "u}";
  return o.str();
}

// The policy members, all forwarding to runtime.h with this struct's rules.
const char* kMembers = R"(
  CUSYNC_HD uint32_t semaphoreCount(const cusync::StageShape& p) const { return cusyncgen_rt::semaphoreCount(rules, p); }
  CUSYNC_HD uint32_t readExtent(const cusync::StageShape&) const { return cusyncgen_rt::readExtent(rules); }
  CUSYNC_HD uint32_t tileIndex(const cusync::Dim3& t, const cusync::StageShape& p) const {
    return cusyncgen_rt::tileIndex(rules, t, p);
  }
  CUSYNC_HD uint32_t postValue(const cusync::Dim3&, const cusync::StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t s, const cusync::StageShape& p) const { return cusyncgen_rt::waitValue(rules, s, p); }
  CUSYNC_HD cusync::SemSpan waitSpan(const cusync::Read& r, const cusync::StageShape& c,
                                     const cusync::StageShape& p) const {
    return cusyncgen_rt::waitSpan(rules, r, c, p);
  }
  CUSYNC_HD bool isSync(const cusync::Read& r, const cusync::StageShape& c, const cusync::StageShape& p) const {
    return !waitSpan(r, c, p).empty();
  }
  const char* checkPair(const cusync::StageShape& c, const cusync::StageShape& p) const {
    return cusyncgen_rt::checkPair(rules, c, p);
  }
)";

std::string grainText(const cusyncgen_rt::Rules& R) {
  if (R.grain == cusyncgen_rt::kTile) return "one semaphore per producer tile";
  if (R.rowsPerSem == 1) return "one semaphore per row of producer tiles";
  return "one semaphore per " + std::to_string(R.rowsPerSem) + " rows of producer tiles";
}

std::string describe(const Model& m, const Edge& e) {
  const cusyncgen_rt::Rules& R = e.rules;
  const StageDecl& c = m.spec.stages[e.cons];
  std::ostringstream o;
  o << "//   from '" << m.spec.stages[e.prod].name << "' (tensor " << m.spec.tensors[e.tensor].name << "): "
    << grainText(R) << ";\n//   tile i reads rows [" << R.rowA << "*i + " << R.rowLo << ", " << R.rowA << "*i + "
    << R.rowHi << ")";
  if (c.walk.size() > 1) o << " (hull over the outer walk)";
  o << ", k-block c of the inner walk columns [" << R.colA << "*c + " << R.colB << ", +" << R.colLen << ")";
  if (R.count > 1) o << ", " << R.count << " copies " << R.stride << " column tiles apart";
  o << "; " << R.steps << " k-blocks of " << R.bk << ".\n";
  return o.str();
}

std::string dim(const cusync::Dim3& d) {
  return "cusync::Dim3(" + std::to_string(d.x) + "u, " + std::to_string(d.y) + "u, " + std::to_string(d.z) + "u)";
}

}  // namespace

namespace {

// C++20's keywords and alternative tokens, and std (which a program must not add to).
const std::set<std::string> kReserved = [] {
  std::istringstream words(
      "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class "
      "compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype "
      "default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline "
      "int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register "
      "reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template "
      "this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t "
      "while xor xor_eq std");
  std::set<std::string> set;
  for (std::string w; words >> w;) set.insert(w);
  return set;
}();

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

// Non-printable characters as "?", so that a file name cannot end the header's first comment line.
std::string printable(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isprint(static_cast<unsigned char>(ch)) ? ch : '?';
  return out;
}

}  // namespace

std::string specStem(const std::string& specPath) {
  const size_t slash = specPath.find_last_of("/\\");
  std::string base = specPath.substr(slash == std::string::npos ? 0 : slash + 1);
  return base.substr(0, base.find('.'));
}

std::string namespaceFor(const std::string& specPath) {
  std::string ns;
  for (char ch : specStem(specPath)) ns += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (ns.empty() || std::isdigit(static_cast<unsigned char>(ns[0]))) ns = "spec_" + ns;
  if (kReserved.count(ns)) ns += "_";
  return ns;
}

std::string namespaceError(const std::string& ns) {
  size_t p = 0;
  while (true) {
    const size_t q = std::min(ns.find("::", p), ns.size());
    const std::string part = ns.substr(p, q - p);
    if (!isIdentifier(part))
      return "'" + printable(ns) + "' is not a C++ namespace name (letters, digits and '_', not starting with a digit; " +
             "nested with '::')";
    if (kReserved.count(part)) return "'" + part + "' is a C++ keyword (or std), which cannot name a namespace";
    if (q == ns.size()) return "";
    p = q + 2;
  }
}

std::string emitHeader(const Model& m, const std::string& ns) {
  std::ostringstream o;
  o << "// Generated by cusyncgen from " << printable(m.spec.file) << ". Do not edit: change the spec.\n"
    << "#pragma once\n\n"
    << "// ---- cusyncgen runtime (tools/cusyncgen/include/cusyncgen/runtime.h) ----\n"
    << kRuntimeText << "// ---- end of runtime ----\n\n"
    << "namespace " << ns << " {\n";
  for (size_t s = 0; s < m.spec.stages.size(); ++s) {
    const StageDecl& st = m.spec.stages[s];
    const std::string& n = st.name;
    o << "\n// Stage '" << n << "'.\n"
      << "constexpr cusync::StageShape " << n << "_shape{" << dim(m.shapes[s].grid) << ", " << dim(m.shapes[s].tile)
      << "};\n"
      << "struct " << n << "_order {\n"
      << "  static constexpr const char* kName = \"" << n << (st.columnMajor ? " column-major" : " row-major")
      << "\";\n"
      << "  CUSYNC_HD uint32_t linearIndex(const cusync::Dim3& t, const cusync::Dim3& g) const {\n"
      << "    return cusyncgen_rt::linearIndex(" << (st.columnMajor ? "true" : "false") << ", t, g);\n  }\n};\n";
    if (m.isProducer[s]) {
      const cusyncgen_rt::Rules& R = m.outRules[s];
      o << "// Output policy: " << grainText(R) << ".\n"
        << "struct " << n << "_out {\n"
        << "  static constexpr const char* kName = \"" << n << "_out\";\n"
        << "  static constexpr bool kSingleWriter = " << (R.grain == cusyncgen_rt::kTile ? "true" : "false") << ";\n"
        << "  cusyncgen_rt::Rules rules = " << rulesInit(R) << ";\n"
        << kMembers << "};\n";
    }
    const std::vector<int> ins = m.inputsOf(int(s));
    if (ins.empty()) continue;
    const Edge& first = m.edges[ins[0]];
    o << "// Input policy; the default rules are for input 0.\n";
    for (int e : ins) o << describe(m, m.edges[e]);
    o << "struct " << n << "_in {\n"
      << "  static constexpr const char* kName = \"" << n << "_in\";\n"
      << "  static constexpr bool kSingleWriter = " << (first.rules.grain == cusyncgen_rt::kTile ? "true" : "false")
      << ";\n"
      << "  cusyncgen_rt::Rules rules = " << rulesInit(first.rules) << ";\n";
    for (int e : ins) {
      const std::string& p = m.spec.stages[m.edges[e].prod].name;
      o << "  // The rules for pairing with '" << p << "': cusync::pair(" << p << ", " << n << ", " << n
        << "_in::from_" << p << "()).\n"
        << "  static constexpr " << n << "_in from_" << p << "() {\n"
        << "    " << n << "_in x{};\n"
        << "    x.rules = " << rulesInit(m.edges[e].rules) << ";\n"
        << "    return x;\n  }\n";
    }
    o << kMembers << "};\n";
  }
  o << "\n}  // namespace " << ns << "\n";
  return o.str();
}

}  // namespace cusyncgen
