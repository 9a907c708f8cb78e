// k-means step 06 — the update as a segmented reduction over points sorted
// by label.
//
// Idea: sort the points by label (a counting sort: the host turns the K
// counts into offsets, order_by_label scatters the point indices), so each
// cluster's points are one segment. segment_sums gives each block a slice of
// 1024 positions and 256 dimensions: a thread walks its dimension down the
// slice, summing in a register, and adds to sums only where the label
// changes and at the end.
// Traffic: X once more (rows gathered through order; each row read
// coalesced across the threads); about (clusters per slice + 1)·D atomics
// per slice instead of 1024·D.
// Cost: the sort's scatter and a second pass over X.
extern "C" __global__ void order_by_label(const int* __restrict__ labels, int n, int* __restrict__ cursor,
                                          int* __restrict__ order) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) order[atomicAdd(&cursor[labels[i]], 1)] = i;
}

#define SLICE 1024

extern "C" __global__ void segment_sums(const float* __restrict__ x, const int* __restrict__ order,
                                        const int* __restrict__ labels, int n, int d, float* __restrict__ sums) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int s0 = blockIdx.y * SLICE, s1 = min(n, s0 + SLICE);
    if (j >= d || s0 >= n) return;
    int run = labels[order[s0]];
    float sum = 0.f;
    for (int s = s0; s < s1; s++) {
        int i = order[s], l = labels[i];
        if (l != run) {
            atomicAdd(&sums[(size_t)run * d + j], sum);
            run = l, sum = 0.f;
        }
        sum += x[(size_t)i * d + j];
    }
    atomicAdd(&sums[(size_t)run * d + j], sum);
}

// batch_offsets turns a batch's counts into the start of each label's
// segment (cursor) and adds them to the iteration's counts. K is small: one
// thread. The add is atomic: streamed, the other stream's batch may be adding
// its counts at the same moment, and a plain += would lose one of the two
// (compute-sanitizer's slower schedule made that happen often enough to
// give k-means centers from a fraction of their points).
extern "C" __global__ void batch_offsets(const int* __restrict__ bcounts, int k, int* __restrict__ cursor,
                                         int* __restrict__ counts) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (int c = 0, s = 0; c < k; c++) {
        cursor[c] = s;
        s += bcounts[c];
        atomicAdd(&counts[c], bcounts[c]);
    }
}
