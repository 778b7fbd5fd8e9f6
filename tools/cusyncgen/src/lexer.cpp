#include "lexer.h"

#include <cctype>
#include <cstdio>

#include "error.h"

namespace cusyncgen {

std::vector<Token> lex(const std::string& text) {
  std::vector<Token> out;
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    i += n;
    col += int(n);
  };
  while (i < text.size()) {
    const char ch = text[i];
    const Loc here{line, col};
    if (ch == '\n') {
      out.push_back({Tok::Newline, "\\n", 0, here});
      ++i;
      ++line;
      col = 1;
    } else if (ch == '#') {
      while (i < text.size() && text[i] != '\n') advance(1);
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      advance(1);
    } else if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
      size_t n = 0;
      while (i + n < text.size() && (std::isalnum(static_cast<unsigned char>(text[i + n])) || text[i + n] == '_')) ++n;
      out.push_back({Tok::Ident, text.substr(i, n), 0, here});
      advance(n);
    } else if (std::isdigit(static_cast<unsigned char>(ch))) {
      size_t n = 0;
      int64_t v = 0;
      while (i + n < text.size() && std::isdigit(static_cast<unsigned char>(text[i + n]))) {
        v = v * 10 + (text[i + n] - '0');
        if (v > (int64_t(1) << 40)) throw SpecError(here, "number too large (at most 2^40 = 1099511627776)");
        ++n;
      }
      out.push_back({Tok::Number, text.substr(i, n), v, here});
      advance(n);
    } else if (std::string("()[]:,=*+-/<").find(ch) != std::string::npos) {
      out.push_back({Tok::Punct, std::string(1, ch), 0, here});
      advance(1);
    } else {
      const unsigned char u = static_cast<unsigned char>(ch);
      char shown[8];
      if (std::isprint(u)) std::snprintf(shown, sizeof shown, "%c", ch);
      else std::snprintf(shown, sizeof shown, "\\x%02x", u);  // a control or non-ASCII byte, spelled out
      throw SpecError(here, std::string("unexpected character '") + shown + "'");
    }
  }
  out.push_back({Tok::Newline, "\\n", 0, {line, col}});
  out.push_back({Tok::End, "end of file", 0, {line, col}});
  return out;
}

}  // namespace cusyncgen
