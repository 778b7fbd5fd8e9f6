// What cusyncgen derives from a checked spec: each stage's shape, and for
// every producer -> consumer edge the rules of its policy (runtime.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cusync/geometry.h"
#include "cusyncgen/runtime.h"
#include "spec.h"

namespace cusyncgen {

struct Edge {
  int cons = -1, prod = -1;     // stage indices
  int tensor = -1;
  std::vector<int> reads;       // indices into the consumer's reads, sorted by column offset
  SyncKind requested = SyncKind::Auto;
  Loc loc;                      // the first read
  // k-blocks a consumer column tile's walk is offset by (reads at columns
  // j*offset + ...: an attention head's slice); 0 when reads ignore j.
  uint32_t jSteps = 0;
  cusyncgen_rt::Rules rules;
};

struct Model {
  Spec spec;
  std::vector<cusync::StageShape> shapes;
  std::vector<Edge> edges;
  // Per stage: the rules its output policy posts with (grain and rows per
  // semaphore are shared by all its consumers); valid where isProducer.
  std::vector<cusyncgen_rt::Rules> outRules;
  std::vector<bool> isProducer;

  std::vector<int> inputsOf(int stage) const {
    std::vector<int> r;
    for (size_t e = 0; e < edges.size(); ++e)
      if (edges[e].cons == stage) r.push_back(int(e));
    return r;
  }
};

// Checks the spec's meaning (shapes, bounds, who writes what is read,
// affine forms the policies support) and derives the model. Throws SpecError.
Model analyze(const Spec& spec);

// parseSpec + analyze.
Model compile(const std::string& text, const std::string& file = "<spec>",
              const std::map<std::string, int64_t>& overrides = {});

}  // namespace cusyncgen
