// The one header to include. Brings in the cusync API (stages, policies in
// cusync::policy, tile orders, the device protocol, launch modes) and the
// original cuSync API (CuStage, CuSync, TileSync<...>, RowSync<...>, ...), so
// programs written for the original compile unchanged.
#pragma once

#include "cusync/error.h"
#include "cusync/fused.h"
#include "cusync/geometry.h"
#include "cusync/launch_mode.h"
#include "cusync/optimizations.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "cusync/tile_order.h"

#if defined(__CUDACC__)
#include "cusync/device.h"
#include "cusync/launch.h"
#endif

#include "cusync/compat/cu_stage.h"
