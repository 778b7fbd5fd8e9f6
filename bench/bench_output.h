// Output files of the cusync-bench commands: CSV rows with fields quoted where
// they need it (RFC 4180), numbers formatted like the printed tables.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace bench {

// A field as it goes into a CSV row: quoted, with inner quotes doubled, when
// it holds a comma, a quote or a line break.
inline std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// One CSV line, newline included.
inline std::string csvRow(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csvField(fields[i]);
  return line + "\n";
}

// printf-style formatting of one number for a CSV field.
inline std::string num(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Writes a command's CSV and JSON texts; a file that cannot be written is
// named on stderr after the command ("cusync-bench conv: cannot write ...").
// Prints "wrote JSON and CSV" and returns true when both were written.
inline bool writeCsvAndJson(const char* command, const std::string& csvPath, const std::string& csvText,
                            const std::string& jsonPath, const std::string& jsonText) {
  bool written = true;
  for (const auto& [path, text] : {std::pair<std::string, std::string>{csvPath, csvText}, {jsonPath, jsonText}}) {
    std::ofstream f(path);
    f << text;
    f.close();
    if (!f) {
      std::fprintf(stderr, "%s: cannot write %s: %s\n", command, path.c_str(), std::strerror(errno));
      written = false;
    }
  }
  if (written) std::printf("wrote %s and %s\n", jsonPath.c_str(), csvPath.c_str());
  return written;
}

}  // namespace bench
