// The MLP's `pdl` variant waits for the whole producer: the core's WholeSync.
#pragma once

#include "cusync/policy/whole_sync.h"

namespace cusync_mlp {

using WholeSync = cusync::policy::WholeSync;

}  // namespace cusync_mlp
