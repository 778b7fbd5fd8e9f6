// Writes the C++ header for a model: per stage its shape, its tile order, an
// output policy if it has consumers and an input policy if it reads a
// producer. Each policy holds its rules as constants; the code that applies
// them (runtime.h) is copied into the header so it needs only the core library.
#pragma once

#include <string>

#include "model.h"

namespace cusyncgen {

// The text of include/cusyncgen/runtime.h, embedded at build time.
extern const char* const kRuntimeText;

// The file name without its folder and from its first '.' on: "specs/gpt3-mlp.cusync" -> "gpt3-mlp".
std::string specStem(const std::string& specPath);

// A namespace name from a file name: "specs/gpt3-mlp.cusync" -> "gpt3_mlp";
// characters that cannot be in an identifier become '_', a leading digit
// gets "spec_" before it, and a C++ keyword (class.cusync) a '_' after it.
std::string namespaceFor(const std::string& specPath);

// Empty when `ns` can name the generated header's namespace (identifiers,
// not keywords, optionally nested with "::"), else what is wrong with it.
std::string namespaceError(const std::string& ns);

std::string emitHeader(const Model& m, const std::string& ns);

}  // namespace cusyncgen
