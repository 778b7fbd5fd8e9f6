// cusyncgen: compiles a spec of how consumer tiles read producer outputs into
// synchronization policies and tile orders (a C++ header), and checks them.
#include <fstream>
#include <iostream>
#include <sstream>

#include "check.h"
#include "emit.h"
#include "error.h"
#include "model.h"

namespace {

const char* kUsage = R"(usage: cusyncgen SPEC -o HEADER [--namespace NS] [--set NAME=VALUE]...
       cusyncgen --check SPEC [--sms N] [--no-emulate] [--set NAME=VALUE]...
       cusyncgen --help

Compiles a cusync spec (docs/cusyncgen.md) into a header of sync policies
and tile orders for the cusync core library, or checks it:
  -o HEADER        write the generated header to HEADER
  --namespace NS   C++ namespace of the header (default: the spec's file name)
  --check          show that every consumer tile waits for all it reads and
                   nothing beyond its granularity, and that the stages run
                   without deadlock on the CPU emulator
  --sms N          SMs of the emulated GPU for --check (default 8)
  --no-emulate     skip the emulator part of --check
  --set NAME=VALUE override a param of the spec (e.g. --set M=64)
Exit status: 0 success, 1 a spec error or a failed check, 2 bad arguments.
)";

int usageError(const std::string& msg) {
  std::cerr << "cusyncgen: " << msg << "\n(run 'cusyncgen --help' for usage)\n";
  return 2;
}

bool parseUint(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(s);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec, header, ns;
  bool doCheck = false, emulate = true;
  int64_t sms = 8;
  std::map<std::string, int64_t> overrides;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&](const char* what) -> const char* {
      if (a + 1 >= argc) return nullptr;
      (void)what;
      return argv[++a];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "-o") {
      const char* v = value("-o");
      if (!v) return usageError("-o needs a file name");
      header = v;
    } else if (arg == "--namespace") {
      const char* v = value("--namespace");
      if (!v) return usageError("--namespace needs a name");
      ns = v;
    } else if (arg == "--check") {
      doCheck = true;
    } else if (arg == "--no-emulate") {
      emulate = false;
    } else if (arg == "--sms") {
      const char* v = value("--sms");
      if (!v || !parseUint(v, sms) || sms == 0 || sms > 1024)
        return usageError("--sms needs a number of SMs between 1 and 1024");
    } else if (arg == "--set") {
      const char* v = value("--set");
      const std::string kv = v ? v : "";
      const size_t eq = kv.find('=');
      int64_t x = 0;
      if (eq == std::string::npos || eq == 0 || !parseUint(kv.substr(eq + 1), x))
        return usageError("--set needs NAME=VALUE with a non-negative integer value");
      overrides[kv.substr(0, eq)] = x;
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (spec.empty()) {
      spec = arg;
    } else {
      return usageError("more than one spec given ('" + spec + "' and '" + arg + "')");
    }
  }
  if (spec.empty()) return usageError("no spec given");
  if (!doCheck && header.empty()) return usageError("nothing to do: give -o HEADER or --check");

  std::ifstream in(spec);
  if (!in) {
    std::cerr << "cusyncgen: cannot read '" << spec << "'\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  cusyncgen::Model model;
  try {
    model = cusyncgen::compile(text.str(), spec, overrides);
  } catch (const cusyncgen::SpecError& e) {
    std::cerr << e.format(spec) << "\n";
    return 1;
  }
  if (!header.empty()) {
    const std::string out = cusyncgen::emitHeader(model, ns.empty() ? cusyncgen::namespaceFor(spec) : ns);
    std::ofstream f(header);
    f << out;
    if (!f) {
      std::cerr << "cusyncgen: cannot write '" << header << "'\n";
      return 1;
    }
  }
  if (doCheck) {
    cusyncgen::CheckOptions opts;
    opts.sms = uint32_t(sms);
    opts.emulate = emulate;
    const cusyncgen::CheckResult r = cusyncgen::check(model, opts);
    for (const std::string& l : r.lines) std::cout << "  " << l << "\n";
    if (!r.ok) {
      std::cout << "FAIL " << spec << "\n  counterexample: " << r.counterexample << "\n";
      return 1;
    }
    std::cout << "OK " << spec << ": " << model.edges.size() << " edge(s) verified\n";
  }
  return 0;
}
