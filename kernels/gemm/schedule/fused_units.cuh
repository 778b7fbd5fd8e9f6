// FusedUnits: the tile scheduler of a fused kernel (cusync/fused.h), whose
// persistent grid runs two GEMM stages. Its blocks take tickets from the
// pipeline's one counter; a ticket decodes to a stage and a unit of it, in
// pipeline order (every unit of stage 0 first), and each stage's own
// schedule (whole tiles, or 64-row tiles split in K) turns the unit into
// tile, part and k range. The next ticket is taken at the current unit's
// ticket point, as WholeTiles does. The stages' tiles have one height and
// schedule; their widths may differ (StageShapes), which the stage views'
// grids already count.
#pragma once

#include <cstdint>

#include "cusync/backend_cuda.h"
#include "cusync/fused.h"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/kernel/sm90.cuh"
#include "kernels/gemm/schedule/split_k.cuh"
#include "kernels/gemm/schedule/unit.cuh"
#include "kernels/gemm/schedule/whole_tiles.cuh"

namespace cusync_gemm::detail {

template <class KP, template <class> class StageSchedule>
class FusedUnits {
  using S0 = StageSchedule<StageViewOf<0, KP>>;
  using S1 = StageSchedule<StageViewOf<1, KP>>;

 public:
  static constexpr bool kCutsK = S0::kCutsK;
  SoloLink link;

  __device__ __forceinline__ FusedUnits(const KP& kp)
      : kp_(kp),
        s0_(kp.s0.view, kp.flags, kp.s0.sched, kBlocksOf(kp.s0.K), /*stageTickets=*/false),
        s1_(kp.s1.view, kp.flags, kp.s1.sched, kBlocksOf(kp.s1.K), /*stageTickets=*/false) {}

  // The first ticket; also lets a programmatic dependent of this grid (the
  // next run, the next layer) be scheduled, as the stages' own tickets do
  // (cusync::ticketElected): its blocks take SMs as this grid's retire.
  //
  // Where the first stage has fewer units than the grid has blocks, blocks
  // on odd SMs take their first ticket ~1 us after those on even SMs, so
  // that the first stage's units go one per TPC (SMs 2k and 2k + 1) before
  // any TPC gets two: two blocks of one TPC stream their weights at ~0.7x
  // (docs/mlp.md, "Decode sizes and block placement").
  __device__ __forceinline__ void takeFirst() {
    cusync::CudaBackend::triggerDependents();
    if (kp_.fused.unitsEnd[0] < gridDim.x && (smId() & 1u) != 0) {
      const long long until = clock64() + kOddSmFirstTicketDelay;
      while (clock64() < until) {
      }
    }
    first_ = unitOfTicket(cusync::CudaBackend::takeTicket(kp_.fused.tickets));
  }

  __device__ __forceinline__ Unit next() {
    const Unit u = haveFirst_ ? first_ : unitOfTicket(nextTicket_);
    haveFirst_ = false;
    return u;
  }

  __device__ __forceinline__ void atTicketPoint(const Unit&) {
    nextTicket_ = cusync::CudaBackend::takeTicket(kp_.fused.tickets);
  }

  __device__ __forceinline__ UnitFinish finishOf(const Unit& u) const {
    return u.stage == 0 ? s0_.finishOf(u) : s1_.finishOf(u);
  }
  template <int R4>
  __device__ __forceinline__ bool reduce(float (&acc)[4 * R4], const Unit& u, UnitFinish& f, int cw) {
    return u.stage == 0 ? s0_.template reduce<R4>(acc, u, f, cw) : s1_.template reduce<R4>(acc, u, f, cw);
  }
  __device__ __forceinline__ void afterStore(const UnitFinish& f, int cw) {
    // Fused stages take no stage tickets; only a split tile's shared fixup
    // meets again, which is the same for both stages.
    s0_.afterStore(f, cw);
  }

 private:
  static constexpr long long kOddSmFirstTicketDelay = 2000;  // clocks: ~1 us at 1.98 GHz
  static __device__ __forceinline__ int kBlocksOf(int64_t K) { return static_cast<int>((K + kBK - 1) / kBK); }

  __device__ __forceinline__ Unit unitOfTicket(unsigned long long t) const {
    const cusync::FusedUnit f = cusync::fusedUnit(kp_.fused, t);
    Unit u;
    if (!f.valid) {
      u.w.run = f.run;
      return u;
    }
    u = f.stage == 0 ? s0_.unitOf(f.unit, f.run) : s1_.unitOf(f.unit, f.run);
    u.stage = f.stage;
    return u;
  }

  const KP& kp_;
  S0 s0_;
  S1 s1_;
  bool haveFirst_ = true;
  Unit first_;
  unsigned long long nextTicket_ = 0;
};

}  // namespace cusync_gemm::detail
