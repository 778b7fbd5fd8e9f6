// What the command-line programs (cusyncgen, cusync-bench, cusync-example)
// share on top of CLI11: strict number and file checks with messages that
// name the bad value, and one way of turning a parse error into an exit
// status (2 for bad usage, 0 after --help).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cusync_cli {

// Exit statuses, the same for every program.
constexpr int kOk = 0;
constexpr int kFailed = 1;    // the work ran and failed, or its input was wrong (a bad spec)
constexpr int kUsage = 2;     // the command line was wrong
constexpr int kNoGpu = 3;     // cusync-bench, cusync-example: no (suitable) CUDA GPU here

// A whole number in [lo, hi] (lo >= 0), in decimal digits only: no base
// prefix, fraction or trailing text, so that "64abc" or "0x40" is an error
// instead of being read as something else; "-5" is out of range. Use it with
// ->transform(): it rewrites the value without leading zeros, which CLI11
// would otherwise read as octal.
inline CLI::Validator wholeNumber(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        if (s.empty()) return "an empty value where a number from " + range + " is expected";
        const bool negative = s[0] == '-';
        const std::string digits = negative ? s.substr(1) : s;
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
          return "'" + s + "' is not a whole number (expected " + range + ")";
        const size_t nz = digits.find_first_not_of('0');
        const std::string value = nz == std::string::npos ? "0" : digits.substr(nz);
        // Up to 18 digits fit int64_t; longer values are out of any range here.
        if ((negative && value != "0") || value.size() > 18 || std::stoll(value) < lo || std::stoll(value) > hi)
          return s + " is out of range (expected " + range + ")";
        s = value;
        return "";
      },
      "");
}

// One of `names`; the message lists them.
inline CLI::Validator oneOf(const std::vector<std::string>& names, const std::string& what) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [names, what, list](std::string& s) -> std::string {
        for (const std::string& n : names)
          if (s == n) return "";
        return "unknown " + what + " '" + s + "' (one of: " + list + ")";
      },
      "");
}

// A file the program can create or overwrite: not a folder, in a folder
// that exists and is writable. Checked before any work starts, so that a
// long run does not end without its results.
inline CLI::Validator writableFile() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path.empty()) return "an empty file name";
        struct stat st {};
        if (stat(path.c_str(), &st) == 0) {
          if (S_ISDIR(st.st_mode)) return "'" + path + "' is a folder, not a file";
          if (access(path.c_str(), W_OK) != 0) return "cannot write '" + path + "': " + std::strerror(errno);
          return "";
        }
        const size_t slash = path.find_last_of('/');
        const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
        if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "cannot create '" + path + "': no folder '" + dir + "'";
        if (access(dir.c_str(), W_OK | X_OK) != 0) return "cannot create '" + path + "': " + std::strerror(errno);
        return "";
      },
      "");
}

// A comma-separated list option, e.g. --m 64,256: each item must pass
// `check` (which may rewrite it, like wholeNumber), and an empty list or an
// empty item ("64,,256", ",") is an error rather than skipped. `out` holds
// the default until the option is given.
template <class T>
CLI::Option* addList(CLI::App* app, const std::string& name, std::vector<T>& out, const std::string& help,
                     const CLI::Validator& check) {
  std::string shown;
  for (const T& v : out) shown += (shown.empty() ? "" : ",") + CLI::detail::to_string(v);
  auto parseList = [&out, check, name](const std::string& list) {
    std::vector<T> items;
    for (size_t p = 0;;) {
      const size_t q = std::min(list.find(',', p), list.size());
      std::string item = list.substr(p, q - p);
      if (item.empty()) throw CLI::ValidationError(name, "an empty item in the list '" + list + "'");
      const std::string err = check(item);
      if (!err.empty()) throw CLI::ValidationError(name, err);
      T v{};
      CLI::detail::lexical_cast(item, v);
      items.push_back(v);
      if (q == list.size()) break;
      p = q + 1;
    }
    out = items;
  };
  return app->add_option_function<std::string>(name, parseList, help)->type_name("LIST")->default_str(shown);
}

// Parses the command line. Returns -1 when the program should go on, else
// the exit status: 0 after --help (printed to stdout), kUsage after an error
// (printed to stderr as "<program>: <what is wrong>").
inline int parse(CLI::App& app, int argc, char** argv) {
  auto usage = [&](const std::string& what) {
    std::cerr << app.get_name() << ": " << what << "\n(run '" << app.get_name() << " --help' for usage)\n";
    return kUsage;
  };
  // A program with commands: name the unknown one (CLI11 would only say that a command is required).
  if (!app.get_subcommands({}).empty() && argc > 1 && argv[1][0] != '-') {
    try {
      app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {
      return usage("unknown command '" + std::string(argv[1]) + "'");
    }
  }
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage(e.what());
  }
}

}  // namespace cusync_cli
