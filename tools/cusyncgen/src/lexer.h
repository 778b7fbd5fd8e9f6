// Splits a spec into tokens. Statements are one per line, so the lexer keeps
// line ends as tokens; '#' starts a comment that runs to the end of the line.
#pragma once

#include <string>
#include <vector>

#include "spec.h"

namespace cusyncgen {

enum class Tok { Ident, Number, Punct, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int64_t value = 0;
  Loc loc;
};

// Throws SpecError on a character that starts no token or a number too large.
std::vector<Token> lex(const std::string& text);

}  // namespace cusyncgen
