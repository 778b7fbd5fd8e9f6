// Output files of the cusync-bench commands: CSV rows with fields quoted where
// they need it (RFC 4180), numbers formatted like the printed tables.
#pragma once

#include <cstdio>
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

}  // namespace bench
