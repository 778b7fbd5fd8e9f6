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

// A C++ identifier from a file name: "specs/gpt3-mlp.cusync" -> "gpt3_mlp".
std::string namespaceFor(const std::string& specPath);

std::string emitHeader(const Model& m, const std::string& ns);

}  // namespace cusyncgen
