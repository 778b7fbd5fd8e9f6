// All synchronization policies. A policy is a small copyable struct whose
// methods are pure functions of (tile or read, consumer shape, producer shape):
//
//   uint32_t semaphoreCount(prod)           semaphores the producer owns
//   uint32_t tileIndex(tile, prod)          semaphore a finished producer tile posts to
//   uint32_t postValue(tile, prod)          what that tile adds (or stores, with NoAtomicAdd)
//   SemSpan  waitSpan(read, cons, prod)     semaphores one consumer step waits on (empty: none)
//   uint32_t waitValue(sem, prod)           value of `sem` that means ready, per run
//   bool     isSync(read, cons, prod)       !waitSpan(...).empty()
//   uint32_t readExtent(prod)               length of the consumer's reduction walk
//   const char* checkPair(cons, prod)       host check of the shapes; nullptr when fine
//   static constexpr bool kSingleWriter     at most one producer tile per semaphore
//
// Write your own by providing the same members; cusync::pair() verifies on the
// host that every waited semaphore exists and that its wait value equals what
// the producer tiles posting to it add up to.
#pragma once

#include "cusync/policy/batched_row_sync.h"
#include "cusync/policy/conv2d_tile_sync.h"
#include "cusync/policy/no_sync.h"
#include "cusync/policy/row_sync.h"
#include "cusync/policy/strided_tile_sync.h"
#include "cusync/policy/tile_sync.h"
#include "cusync/policy/whole_sync.h"
