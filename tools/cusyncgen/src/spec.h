// The parsed form of a .cusync spec: stages, tensors and accesses, with the
// source position of everything an error may point at. Integer expressions
// are already folded: constants are numbers, index expressions are Affine.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cusyncgen {

struct Loc {
  int line = 0, col = 0;
};

// c + sum(coef[v] * v) over index variables v.
struct Affine {
  int64_t c = 0;
  std::map<std::string, int64_t> coef;

  bool isConstant() const { return coef.empty(); }
  int64_t at(const std::string& v) const {
    auto it = coef.find(v);
    return it == coef.end() ? 0 : it->second;
  }
  bool uses(const std::string& v) const { return at(v) != 0; }
};

// [lo : hi) along one axis of a tensor.
struct Range {
  Affine lo, hi;
  Loc loc;
};

// NAME[rows, cols]: what a tile writes, or reads at one k-block.
struct Access {
  std::string tensor;
  Loc loc;
  Range rows, cols;
  bool padded = false;  // parts outside the tensor are padding, not data
};

struct WalkVar {
  std::string name;
  int64_t extent = 0;
  Loc loc;
};

enum class SyncKind { Auto, Tile, Row, Rows, Strided };

struct SyncReq {
  std::string tensor;
  SyncKind kind = SyncKind::Auto;
  int64_t group = 1;  // rows(G)
  Loc loc;
};

struct TensorDecl {
  std::string name;
  int64_t rows = 0, cols = 0;
  Loc loc;
  int producer = -1;  // index of the stage whose output it is; -1: an input
};

struct StageDecl {
  std::string name;
  Loc loc;
  int64_t grid[3] = {1, 1, 1};
  int64_t tile[3] = {1, 1, 1};
  Loc gridLoc, tileLoc;
  int output = -1;  // tensor index
  bool hasWrites = false;
  Access writes;
  std::vector<WalkVar> walk;
  std::vector<Access> reads;
  std::vector<SyncReq> syncs;
  bool columnMajor = false;
};

struct Spec {
  std::string file;
  std::map<std::string, int64_t> params;
  std::vector<TensorDecl> tensors;
  std::vector<StageDecl> stages;

  int findTensor(const std::string& n) const {
    for (size_t t = 0; t < tensors.size(); ++t)
      if (tensors[t].name == n) return int(t);
    return -1;
  }
  int findStage(const std::string& n) const {
    for (size_t s = 0; s < stages.size(); ++s)
      if (stages[s].name == n) return int(s);
    return -1;
  }
};

}  // namespace cusyncgen
