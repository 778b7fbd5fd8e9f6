// Uses each part of the cusync package from host code: the core's policies
// and CPU emulator, the GEMM's host API, and policies that
// cusync_generate_policies() made from chain.cusync. Prints "consumer: ok".
#include <chrono>
#include <cstdio>
#include <string>

#include "chain.h"
#include "cusync/cusync.h"
#include "cusync/emu/pipeline.h"
#include "kernels/gemm/gemm.h"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("consumer: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Runs gemm1 -> gemm2 (policies In1/Out1, In2) on the emulator; every tile
// only takes its ticket, waits for what it reads and posts.
template <class Out1, class In2>
void runChain(const Out1& out1, const In2& in2, cusync::Dim3 grid, cusync::Dim3 tile, const char* what) {
  using cusync::policy::NoSync;
  cusync::Stage<NoSync, Out1, cusync::HostMemory> s1("gemm1", grid, tile, NoSync{}, out1);
  cusync::Stage<In2, NoSync, cusync::HostMemory> s2("gemm2", grid, tile, in2, NoSync{});
  cusync::pair(s1, s2);
  cusync::emu::Emulator emu({2, 1});
  cusync::emu::Pipeline pipe(emu, cusync::LaunchMode::Pdl);
  auto program = [](const auto& v, cusync::emu::Block& b) {
    const cusync::TileWork w = cusync::emu::tile(v, b);
    if (!w.valid) return;
    for (uint32_t k0 = 0; k0 < 16; k0 += v.shape.tile.z)
      cusync::emu::wait(v, w, cusync::Read{k0, w.tile.y * v.shape.tile.y, 0, 0});
    cusync::emu::post(v, w);
  };
  pipe.launch(s1, program);
  pipe.launch(s2, program);
  pipe.finish();
  const cusync::emu::Report r = emu.run(std::chrono::seconds(30));
  expect(r.ok, std::string(what) + " on the emulator: " + r.message);
}

}  // namespace

int main() {
  // The core's RowSync, and the generated policies of chain.cusync.
  runChain(cusync::policy::RowSync{}, cusync::policy::RowSync{}, chain::gemm1_shape.grid, chain::gemm1_shape.tile,
           "RowSync");
  runChain(chain::gemm1_out{}, chain::gemm2_in{}, chain::gemm1_shape.grid, chain::gemm1_shape.tile,
           "generated policies");

  // The GEMM's host API: argument checks, no GPU needed.
  alignas(16) static unsigned char a[64 * 64 * 2], b[64 * 64 * 2], c[64 * 64 * 2];
  cusync_gemm::GemmArgs args;
  args.M = 64, args.N = 64, args.K = 64;
  args.A = a, args.B = b, args.C = c;
  bool accepted = true;
  try {
    cusync_gemm::checkArgs(args);
  } catch (const cusync::Error& e) {
    accepted = false;
    expect(false, std::string("checkArgs rejected valid arguments: ") + e.what());
  }
  args.K = 60;  // not a multiple of 8
  bool rejected = false;
  try {
    cusync_gemm::checkArgs(args);
  } catch (const cusync::Error&) {
    rejected = true;
  }
  expect(accepted && rejected, "checkArgs accepts valid and rejects invalid arguments");

  std::printf("consumer: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
