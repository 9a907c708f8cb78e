// Step 01 — embedding lookup: x[t] = table[token[t]], widened to fp32.
//
// Idea: one block per token copies one row of the table into the residual
// stream, which is fp32 in both engines. The table is the LM head's weight
// too (tied embeddings), so it is stored once, in the engine's type.
// Traffic: H reads (2 or 4 bytes) and H 4-byte writes per token; coalesced.
// Cost: none worth a second version: this is a gather, bound by bandwidth.
#include "lfm2/common.cuh"

extern "C" __global__ void embed(const int* __restrict__ tokens, int H, int V, const elem* __restrict__ table, float* __restrict__ x) {
    int tok = tokens[blockIdx.x];
    float* row = x + (size_t)blockIdx.x * H;
    if (tok < 0 || tok >= V) {  // the host checks ids first; a NaN row makes a slip visible
        for (int i = threadIdx.x; i < H; i += blockDim.x) row[i] = __int_as_float(0x7fc00000);
        return;
    }
    const elem* src = table + (size_t)tok * H;
    for (int i = threadIdx.x; i < H; i += blockDim.x) row[i] = to_float(src[i]);
}
