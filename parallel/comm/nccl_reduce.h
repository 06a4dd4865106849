// Device twin of reduce_blocks_in_order (communicator.h): sums n blocks in block order on the GPU,
// for the NCCL communicator's deterministic mode.
#pragma once

#include "parallel/comm/communicator.h"

namespace gptrain::parallel {

// out (count) = blocks[0] op blocks[1] op ... op blocks[n-1], each block `count` elements; device
// pointers; enqueued on `stream` (a cudaStream_t). Returns null, or what went wrong (launch error).
const char* reduce_blocks_in_order_device(void* out, const void* blocks, int n, std::size_t count, ElemType t,
                                          ReduceOp op, void* stream);

}  // namespace gptrain::parallel
