// Each bad input gives its documented error, naming the stage.
#include <gtest/gtest.h>

#include "cusync/emu/pipeline.h"
#include "cusync/stage.h"

using namespace cusync;
using P = policy::TileSync;
using R = policy::RowSync;
template <class I, class O>
using HStage = Stage<I, O, HostMemory>;

#define EXPECT_CUSYNC_ERROR(stmt, code_, text)                                         \
  try {                                                                                \
    stmt;                                                                              \
    ADD_FAILURE() << "expected " << toString(code_);                                   \
  } catch (const Error& e) {                                                           \
    EXPECT_EQ(e.code(), code_) << e.what();                                            \
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();       \
  }

TEST(StageErrors, UnpairedConsumer) {
  HStage<R, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
  EXPECT_CUSYNC_ERROR(c.view(), ErrorCode::UnpairedStage, "stage 'gemm2'");
}

TEST(StageErrors, ProducerWithoutOutputPolicy) {
  HStage<policy::NoSync, policy::NoSync> p("plain", Dim3(4, 4), Dim3(32, 32, 1));
  HStage<R, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::UnpairedStage, "'plain' has output policy NoSync");
}

TEST(StageErrors, PolicyMismatchWouldReadEarly) {
  HStage<policy::NoSync, R> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  HStage<P, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::PolicyMismatch, "would read early");
}

TEST(StageErrors, PolicyMismatchWouldHang) {
  HStage<policy::NoSync, policy::BatchedRowSync> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1), {}, {2});
  HStage<policy::BatchedRowSync, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32), {3});
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::PolicyMismatch, "would hang");
}

TEST(StageErrors, NoAtomicAddNeedsSingleWriter) {
  EXPECT_CUSYNC_ERROR((HStage<policy::NoSync, R>("gemm1", Dim3(4, 4), Dim3(32, 32, 1), {}, {}, NoAtomicAdd)),
                      ErrorCode::PolicyMismatch, "NoAtomicAdd");
  EXPECT_NO_THROW((HStage<policy::NoSync, P>("gemm1", Dim3(4, 4), Dim3(32, 32, 1), {}, {}, NoAtomicAdd)));
}

TEST(StageErrors, ConsumerRowsOutsideProducer) {
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 2), Dim3(32, 32, 1));
  HStage<P, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::GridMismatch, "row tile 2");
}

TEST(StageErrors, MoreBatchesThanProducer) {
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 2, 1), Dim3(32, 32, 1));
  HStage<P, policy::NoSync> c("gemm2", Dim3(4, 2, 2), Dim3(32, 32, 32));
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::GridMismatch, "2 batches");
}

TEST(StageErrors, StridedShapeChecked) {
  HStage<policy::NoSync, policy::StridedTileSync> p("qkv", Dim3(9, 2), Dim3(32, 32, 1), {}, {4, 3});
  HStage<policy::StridedTileSync, policy::NoSync> c("attn", Dim3(4, 2), Dim3(32, 32, 32), {4, 3});
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::PolicyMismatch, "stride * count");
}

TEST(StageErrors, Conv2DStepMustDivideChannels) {
  policy::Conv2DTileSync cv;
  cv.C = 48;
  cv.W = 8;
  HStage<policy::NoSync, policy::Conv2DTileSync> p("conv1", Dim3(2, 8), Dim3(32, 8, 1), {}, cv);
  HStage<policy::Conv2DTileSync, policy::NoSync> c("conv2", Dim3(2, 8), Dim3(32, 8, 32), cv);
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::PolicyMismatch, "must divide C");
}

// A policy that waits past the producer's semaphore array.
struct OverreachingSync : policy::TileSync {
  static constexpr const char* kName = "OverreachingSync";
  SemSpan waitSpan(const Read& r, const StageShape& c, const StageShape& p) const {
    SemSpan s = policy::TileSync::waitSpan(r, c, p);
    if (!s.empty()) s.first += p.grid.count();
    return s;
  }
};

TEST(StageErrors, SemaphoreArrayTooSmall) {
  HStage<policy::NoSync, policy::TileSync> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  HStage<OverreachingSync, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
  EXPECT_CUSYNC_ERROR(c.addInput(p, OverreachingSync{}), ErrorCode::SemaphoreArrayTooSmall, "semaphore 16");
}

TEST(StageErrors, BadShapesAndFlags) {
  EXPECT_CUSYNC_ERROR((HStage<policy::NoSync, P>("g", Dim3(0, 4), Dim3(32, 32, 1))), ErrorCode::InvalidArgument,
                      "no tiles");
  EXPECT_CUSYNC_ERROR((HStage<policy::NoSync, P>("g", Dim3(4, 4), Dim3(0, 32, 1))), ErrorCode::InvalidArgument,
                      "zero rows");
  EXPECT_CUSYNC_ERROR((HStage<policy::NoSync, P>("g", Dim3(4, 4), Dim3(32, 32, 1), {}, {}, 64)),
                      ErrorCode::InvalidArgument, "unknown optimization");
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  HStage<P, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 0));
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::InvalidArgument, "k step");
}

TEST(StageErrors, TooManyProducers) {
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  HStage<P, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
  for (uint32_t i = 0; i < kMaxInputs; ++i) pair(p, c);
  EXPECT_CUSYNC_ERROR(pair(p, c), ErrorCode::InvalidArgument, "more than");
}

TEST(StageErrors, LaunchGridMismatchAndBadMode) {
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  emu::Emulator e({2, 1});
  emu::Pipeline pipe(e, LaunchMode::Pdl);
  EXPECT_CUSYNC_ERROR(pipe.launch(p, [](const auto&, emu::Block&) {}, Dim3(15)), ErrorCode::GridMismatch,
                      "15 blocks for 16 tiles");
  EXPECT_CUSYNC_ERROR(parseLaunchMode("fast"), ErrorCode::InvalidArgument, "unknown launch mode 'fast'");
  EXPECT_EQ(parseLaunchMode("streams"), LaunchMode::Streams);
}

// A consumer launched before its producer would wait forever on the GPU:
// the launcher refuses it, naming both stages, in every mode and every run,
// and reset() starts the count again. The producer launched ahead (a
// warm-up) is allowed. The emulator only runs what the launcher accepts.
TEST(StageErrors, ConsumerLaunchedBeforeItsProducerIsRefused) {
  for (LaunchMode mode : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl}) {
    SCOPED_TRACE(toString(mode));
    HStage<policy::NoSync, R> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
    HStage<R, policy::NoSync> c("gemm2", Dim3(4, 4), Dim3(32, 32, 32));
    pair(p, c);
    emu::Emulator e({2, 1});
    emu::Pipeline pipe(e, mode);
    const auto nothing = [](const auto&, emu::Block&) {};
    EXPECT_CUSYNC_ERROR(pipe.launch(c, nothing), ErrorCode::UnpairedStage,
                        "launch 1 of this stage comes before launch 1 of its producer 'gemm1'");
    EXPECT_EQ(c.launches(), 0u);
    pipe.launch(p, nothing);
    pipe.launch(c, nothing);
    pipe.finish();
    EXPECT_EQ(p.launches(), 1u);
    EXPECT_EQ(c.launches(), 1u);
    EXPECT_CUSYNC_ERROR(pipe.launch(c, nothing), ErrorCode::UnpairedStage, "its launches since its last reset: 1)");
    pipe.launch(p, nothing);
    pipe.launch(p, nothing);  // a producer may run ahead
    pipe.launch(c, nothing);
    pipe.finish();
    p.reset();
    c.reset();
    EXPECT_CUSYNC_ERROR(pipe.launch(c, nothing), ErrorCode::UnpairedStage, "before launch 1 of its producer");
  }
}

// Where each stage goes: in a Pdl pipeline consumers after the first
// position are programmatic, and so is a first stage whose kernel waits for
// prior grids; no other mode launches programmatically.
TEST(LaunchPlacement, ProgrammaticStages) {
  EXPECT_FALSE(place(LaunchMode::Pdl, 0, false, NoOptimization).programmatic);
  EXPECT_TRUE(place(LaunchMode::Pdl, 0, false, WaitsForPriorGrid).programmatic);
  EXPECT_TRUE(place(LaunchMode::Pdl, 1, true, NoOptimization).programmatic);
  EXPECT_FALSE(place(LaunchMode::Pdl, 1, false, WaitsForPriorGrid).programmatic);
  for (LaunchMode m : {LaunchMode::Serial, LaunchMode::Streams})
    for (int opts : {int(NoOptimization), int(WaitsForPriorGrid)})
      for (unsigned pos : {0u, 1u}) EXPECT_FALSE(place(m, pos, pos > 0, opts).programmatic) << toString(m);
}

TEST(StageErrors, CustomOrderMustBeBijection) {
  struct Bad {
    uint32_t linearIndex(const Dim3&, const Dim3&) const { return 0; }
  };
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  EXPECT_CUSYNC_ERROR(p.setOrder(Bad{}), ErrorCode::OrderNotBijection, "tile (1,0,0)");
}

TEST(StageErrors, PersistentBlockCountMustNotChange) {
  HStage<policy::NoSync, P> p("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  p.view(8);
  EXPECT_NO_THROW(p.view(8));
  EXPECT_CUSYNC_ERROR(p.view(4), ErrorCode::GridMismatch, "8 persistent blocks before");
  EXPECT_CUSYNC_ERROR(p.view(), ErrorCode::GridMismatch, "one block per tile now");
  p.reset();
  EXPECT_NO_THROW(p.view(4));
}

// A stage's workspace (cusync/workspace.h): empty until reserved, zeroed
// when allocated, kept while requests fit, grown to the larger of each
// region's sizes (the outgrown buffer kept until the stage goes), its state
// zeroed by reset().
TEST(StageWorkspace, ReservesGrowsAndResets) {
  HStage<policy::NoSync, P> s("gemm1", Dim3(4, 4), Dim3(32, 32, 1));
  Workspace<HostMemory>& ws = s.workspace();
  EXPECT_EQ(ws.buffers(), 0u);
  EXPECT_EQ(ws.stateCapacity(), 0u);
  const WorkspaceRegions a = ws.reserve(300, 1000);
  EXPECT_EQ(ws.buffers(), 1u);
  EXPECT_EQ(ws.stateCapacity(), 512u);
  EXPECT_EQ(ws.scratchCapacity(), 1024u);
  EXPECT_EQ(static_cast<unsigned char*>(a.scratch) - static_cast<unsigned char*>(a.state), 512);
  for (size_t i = 0; i < 512 + 1024; ++i) ASSERT_EQ(static_cast<unsigned char*>(a.state)[i], 0) << i;
  // Requests that fit: the same buffer and layout (scratch after the whole state).
  const WorkspaceRegions b = ws.reserve(10, 1024);
  EXPECT_EQ(b.state, a.state);
  EXPECT_EQ(b.scratch, a.scratch);
  EXPECT_EQ(ws.buffers(), 1u);
  // A larger scratch: a new zeroed buffer keeping the larger state.
  static_cast<unsigned char*>(a.state)[0] = 7;
  const WorkspaceRegions c = ws.reserve(100, 5000);
  EXPECT_NE(c.state, a.state);
  EXPECT_EQ(ws.buffers(), 2u);
  EXPECT_EQ(ws.stateCapacity(), 512u);
  EXPECT_EQ(ws.scratchCapacity(), 5120u);
  EXPECT_EQ(static_cast<unsigned char*>(c.state)[0], 0);
  // reset() zeroes the state region of the current buffer, not its scratch.
  static_cast<unsigned char*>(c.state)[511] = 1;
  static_cast<unsigned char*>(c.scratch)[0] = 2;
  s.reset();
  EXPECT_EQ(static_cast<unsigned char*>(c.state)[511], 0);
  EXPECT_EQ(static_cast<unsigned char*>(c.scratch)[0], 2);
  // Nothing is shared between stages.
  HStage<policy::NoSync, P> t("gemm2", Dim3(4, 4), Dim3(32, 32, 1));
  EXPECT_EQ(t.workspace().buffers(), 0u);
  EXPECT_NE(t.workspace().reserve(100, 5000).state, c.state);
}
