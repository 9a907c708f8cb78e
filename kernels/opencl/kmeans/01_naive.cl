// k-means step 01 — naive assignment: a work-item per point (the OpenCL twin
// of cuda/kmeans/01_naive.cu, and the reference solution of the kmeans/assign
// exercise).
//
// Idea: the textbook loop. Work-item i walks the K centers and, for each, the
// D dimensions of its point and of the center, all from global memory, and
// keeps the nearest: labels[i] is its index (the first of equals), dist[i]
// the squared distance.
// Traffic: every work-item reads its whole row (D floats) once per center, K
// times in all, mostly from caches; the centers are read by every work-item.
// Cost: neighbouring work-items read rows D floats apart, so a warp's loads
// touch as many cache lines as it has work-items (uncoalesced), and each
// line is used for one float before the next center comes round. The NDRange
// is rounded up to whole work-groups: work-items past n return at once.

__kernel void assign_naive(const __global float* restrict x, const __global float* restrict centers,
                           const int n, const int d, const int k,
                           __global int* restrict labels, __global float* restrict dist)
{
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    const __global float* row = x + (size_t)i * d;
    int best = 0;
    float bestD = INFINITY;
    for (int c = 0; c < k; c++) {
        float s = 0.0f;
        for (int j = 0; j < d; j++) {
            const float t = row[j] - centers[c * d + j];
            s += t * t;
        }
        if (s < bestD) {
            best = c;
            bestD = s;
        }
    }
    labels[i] = best;
    dist[i] = bestD;
}
