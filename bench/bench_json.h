// The JSON document every cusync-bench command writes: the run's header
// (device, ceilings, iterations, timing mode, baseline), then its own rows.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace bench {

// Non-finite numbers are written as null.
inline nlohmann::ordered_json runDocument(const std::string& device, double peakTflops, double bandwidthTbs, int iters,
                                          bool graph, const std::string& speedupBaseline) {
  nlohmann::ordered_json doc;
  doc["device"] = device;
  doc["peak_tflops"] = peakTflops;
  doc["bandwidth_tbs"] = bandwidthTbs;
  doc["iters"] = iters;
  doc["timing"] = graph ? "graph" : "launches";
  doc["speedup_baseline"] = speedupBaseline;
  return doc;
}

}  // namespace bench
