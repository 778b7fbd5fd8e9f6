// cusyncgen: compiles a spec of how consumer tiles read producer outputs into
// synchronization policies and tile orders (a C++ header), and checks them.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <sstream>

#include "check.h"
#include "cusync_cli.h"
#include "emit.h"
#include "error.h"
#include "model.h"

namespace {

constexpr int kTimedOut = 4;  // --check ran out of time (--timeout) before deciding

// Real specs are a few kB; the lexer holds every token at once.
constexpr int64_t kMaxSpecBytes = int64_t(1) << 20;

const char* kDescription = R"(cusyncgen: compiles a cusync spec (docs/cusyncgen.md) into a header of sync
policies and tile orders for the cusync core library (-o), or checks it (--check):
every consumer tile waits for all it reads and nothing beyond its granularity,
and the stages run without deadlock on the CPU emulator.)";

const char* kExitStatus = R"(Exit status: 0 success; 1 a spec error, an unreadable spec or unwritable header,
or a failed check (a read not waited for, an excess wait, a deadlock on the
emulator); 2 bad usage; 4 --check ran out of time (--timeout) before it could
decide.)";

// The text of the spec file, or an error message in `err`.
bool readSpec(const std::string& path, std::string& text, std::string& err) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    err = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    err = "'" + path + "' is a folder, not a spec file";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    err = "'" + path + "' is not a regular file";
    return false;
  }
  if (st.st_size > kMaxSpecBytes) {
    err = "'" + path + "' has " + std::to_string(st.st_size) + " bytes; a spec may have at most " +
          std::to_string(kMaxSpecBytes);
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  if (in) buf << in.rdbuf();
  if (!in) {
    err = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  text = buf.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec, header, ns;
  bool doCheck = false, noEmulate = false;
  int sms = 8, timeout = 600;
  std::vector<std::string> sets;

  CLI::App app(kDescription, "cusyncgen");
  app.add_option("SPEC", spec, "the spec file")->required()->type_name("SPEC");
  app.add_option("-o", header, "write the generated header to HEADER")
      ->check(cusync_cli::writableFile())
      ->type_name("HEADER");
  app.add_option("--namespace", ns, "C++ namespace of the header (default: from the spec's file name)")
      ->check(CLI::Validator([](std::string& s) { return cusyncgen::namespaceError(s); }, ""))
      ->type_name("NS");
  app.add_flag("--check", doCheck,
               "show that every consumer tile waits for all it reads and nothing beyond its granularity, and\n"
               "that the stages run without deadlock on the CPU emulator");
  app.add_option("--sms", sms, "SMs of the emulated GPU for --check (1 to 1024)")
      ->transform(cusync_cli::wholeNumber(1, 1024))
      ->type_name("N")
      ->capture_default_str();
  app.add_flag("--no-emulate", noEmulate, "skip the emulator part of --check");
  app.add_option("--timeout", timeout, "seconds --check may take before it gives up undecided (1 to 86400)")
      ->transform(cusync_cli::wholeNumber(1, 86400))
      ->type_name("SECONDS")
      ->capture_default_str();
  app.add_option("--set", sets, "override a param of the spec, e.g. --set M=64 (repeatable)")
      ->check(CLI::Validator(
          [](std::string& kv) -> std::string {
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) return "'" + kv + "' is not NAME=VALUE";
            std::string value = kv.substr(eq + 1);
            const std::string err = cusync_cli::wholeNumber(0, int64_t(1) << 40)(value);
            return err.empty() ? "" : kv.substr(0, eq) + ": " + err;
          },
          ""))
      ->type_name("NAME=VALUE");
  app.footer(kExitStatus);
  if (const int status = cusync_cli::parse(app, argc, argv); status >= 0) return status;
  if (!doCheck && header.empty()) {
    std::cerr << "cusyncgen: nothing to do: give -o HEADER or --check\n(run 'cusyncgen --help' for usage)\n";
    return cusync_cli::kUsage;
  }
  std::map<std::string, int64_t> overrides;
  for (const std::string& kv : sets) {
    const size_t eq = kv.find('=');
    overrides[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));  // checked above
  }

  try {
    std::string text, err;
    if (!readSpec(spec, text, err)) {
      std::cerr << "cusyncgen: " << err << "\n";
      return cusync_cli::kFailed;
    }
    cusyncgen::Model model;
    try {
      model = cusyncgen::compile(text, spec, overrides);
    } catch (const cusyncgen::SpecError& e) {
      std::cerr << e.format(spec) << "\n";
      return cusync_cli::kFailed;
    }
    if (!header.empty()) {
      if (ns.empty()) {
        ns = cusyncgen::namespaceFor(spec);
        if (ns != cusyncgen::specStem(spec))
          std::cerr << "cusyncgen: note: the header's namespace is '" << ns << "' ('" << cusyncgen::specStem(spec)
                    << "' from the file name cannot name one); --namespace NS chooses another\n";
      }
      const std::string out = cusyncgen::emitHeader(model, ns);
      std::ofstream f(header);
      f << out;
      f.close();
      if (!f) {
        std::cerr << "cusyncgen: cannot write '" << header << "': " << std::strerror(errno) << "\n";
        return cusync_cli::kFailed;
      }
    }
    if (doCheck) {
      cusyncgen::CheckOptions opts;
      opts.sms = uint32_t(sms);
      opts.emulate = !noEmulate;
      opts.deadline = opts.start + std::chrono::seconds(timeout);
      opts.progress = &std::cerr;
      const cusyncgen::CheckResult r = cusyncgen::check(model, opts);
      for (const std::string& l : r.lines) std::cout << "  " << l << "\n";
      if (r.timedOut) {
        std::cout << "UNDECIDED " << spec << "\n";
        std::cerr << "cusyncgen: --check ran out of time after " << timeout << " s (--timeout " << timeout
                  << ") in the " << r.counterexample << "; nothing wrong was found up to there\n";
        return kTimedOut;
      }
      if (!r.ok) {
        std::cout << "FAIL " << spec << "\n  counterexample: " << r.counterexample << "\n";
        std::cerr << "cusyncgen: --check failed for " << spec << " (counterexample above)\n";
        return cusync_cli::kFailed;
      }
      std::cout << "OK " << spec << ": " << model.edges.size() << " edge(s) verified\n";
    }
    return cusync_cli::kOk;
  } catch (const std::bad_alloc&) {
    std::cerr << "cusyncgen: out of memory: the spec's grids are too large to check on this machine\n";
    return cusync_cli::kFailed;
  } catch (const std::exception& e) {
    std::cerr << "cusyncgen: " << e.what() << "\n";
    return cusync_cli::kFailed;
  }
}
