// Step 4: wider data types. Global loads and stores move WIDTH floats at a
// time (float4 by default) instead of one. The C tile stays TS×TS; the
// work-group becomes (TS/WIDTH)×TS work-items and each computes WIDTH
// consecutive elements of one row of C, accumulated in one floatWIDTH
// vector. Per tile each work-item loads one vector of A and one of B.
//
// Global traffic: the bytes are unchanged from step 2 with the same TS,
// 4·(M·K·⌈N/TS⌉ + K·N·⌈M/TS⌉ + M·N), but they move in 1/WIDTH as many load
// and store instructions (128-bit transactions on GPUs, one AVX register
// per load on CPUs). __local traffic: per k, one scalar A load (broadcast)
// and one vector B load feed WIDTH FMAs.
//
// Costs: WIDTH accumulators per work-item; TS must be a multiple of WIDTH;
// the A tile is padded by one column so that the four rows of a warp read
// Asub[ly][k] from four different banks.
//
// Edges and alignment (the choice): a vector load needs its address aligned
// to WIDTH floats. Buffers start aligned and tile columns are multiples of
// WIDTH, so a row of B or C (N floats) keeps vectors aligned exactly when
// N % WIDTH == 0, and a row of A when K % WIDTH == 0. The kernel checks that
// at run time (the test is uniform: every work-item takes the same branch):
//   - aligned: one vector load, which is wholly inside or wholly outside the
//     matrix since the column is a multiple of WIDTH: outside reads zeros;
//   - not aligned: WIDTH scalar loads, each bounds-checked (zeros outside).
// Stores of C are the same: a vector store when N % WIDTH == 0, else scalar
// stores of the columns inside C. Any M, N, K work; shapes with K or N not a
// multiple of WIDTH just run the scalar path for that operand. No padding
// copies of the matrices are made.
//
// Parameters (-D at build time):
//   TS     tile side (default 32)
//   WIDTH  floats per vector: 2, 4, 8 or 16, a divisor of TS (default 4,
//          float4: 8×32 = 256 work-items per group)

#ifndef TS
#define TS 32
#endif
#ifndef WIDTH
#define WIDTH 4
#endif
#if WIDTH != 2 && WIDTH != 4 && WIDTH != 8 && WIDTH != 16
#error "WIDTH must be 2, 4, 8 or 16: the width of an OpenCL vector type"
#endif
#if TS % WIDTH != 0
#error "TS must be a multiple of WIDTH"
#endif

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define floatX CAT(float, WIDTH)
#define vloadX CAT(vload, WIDTH)
#define vstoreX CAT(vstore, WIDTH)
#define RTS (TS / WIDTH) // work-items along N

// loadX returns WIDTH consecutive floats of row r of the rows×cols row-major
// matrix X, from column c (a multiple of WIDTH), with zeros for elements
// outside X. vec says that cols is a multiple of WIDTH, so that the vector
// is aligned and wholly inside or outside X.
static inline floatX loadX(const __global float* restrict X, const int rows, const int cols,
                           const int r, const int c, const bool vec)
{
    if (r >= rows || c >= cols) {
        return (floatX)(0.0f);
    }
    const __global float* row = X + r*cols;
    if (vec) {
        return *(const __global floatX*)(row + c);
    }
    float t[WIDTH];
    #pragma unroll
    for (int j = 0; j < WIDTH; j++) {
        t[j] = c + j < cols ? row[c + j] : 0.0f;
    }
    return vloadX(0, t);
}

// storeX writes the elements of v that fall inside X to row r of X from
// column c, with one vector store when vec.
static inline void storeX(__global float* restrict X, const int rows, const int cols,
                          const int r, const int c, const bool vec, const floatX v)
{
    if (r >= rows || c >= cols) {
        return;
    }
    __global float* row = X + r*cols;
    if (vec) {
        *(__global floatX*)(row + c) = v;
        return;
    }
    float t[WIDTH];
    vstoreX(v, 0, t);
    #pragma unroll
    for (int j = 0; j < WIDTH; j++) {
        if (c + j < cols) {
            row[c + j] = t[j];
        }
    }
}

__kernel __attribute__((reqd_work_group_size(RTS, TS, 1)))
void gemm(const int M, const int N, const int K,
          const __global float* restrict A,
          const __global float* restrict B,
          __global float* restrict C)
{
    const int lx = get_local_id(0); // vector column within the tile, 0..RTS-1
    const int ly = get_local_id(1); // row within the tile, 0..TS-1
    const int m = get_group_id(1)*TS + ly;
    const int n = get_group_id(0)*TS + lx*WIDTH; // first of this work-item's WIDTH columns
    const bool vecA = K % WIDTH == 0;
    const bool vecB = N % WIDTH == 0;

    __local float Asub[TS][TS + 1]; // +1: rows start in different banks
    __local floatX Bsub[TS][RTS];

    floatX acc = (floatX)(0.0f);
    for (int k0 = 0; k0 < K; k0 += TS) {
        // Row ly of the A tile, columns lx·WIDTH…: one vector of A.
        vstoreX(loadX(A, M, K, m, k0 + lx*WIDTH, vecA), 0, &Asub[ly][lx*WIDTH]);
        // Row ly of the B tile, vector column lx.
        Bsub[ly][lx] = loadX(B, K, N, k0 + ly, n, vecB);
        barrier(CLK_LOCAL_MEM_FENCE);

        #pragma unroll 8
        for (int k = 0; k < TS; k++) {
            acc = fma((floatX)(Asub[ly][k]), Bsub[k][lx], acc);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    storeX(C, M, N, m, n, vecB, acc);
}
