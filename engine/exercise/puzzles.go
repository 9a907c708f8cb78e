package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The on-ramp: ten puzzles before the tiled GEMM, each a kernel of a few
// lines in CUDA and in OpenCL C, in the syllabus's order (docs/course.md):
// a thread per element, a guard, a 2-D grid, a stencil through shared
// memory, a reduction within a warp and within a block, a scan, a
// transpose through a tile and without bank conflicts, a histogram with
// atomics. Each is checked at once on sizes that are multiples of no
// block, on one element and, where a launch still happens, on none; each
// is memory bound, so its speed is in GB/s.
func init() {
	for i := range puzzles {
		puzzles[i].register()
	}
}

// Launch constants of the puzzles, passed to every kernel as -D options.
const (
	puzzleBlock   = 256  // BLOCK: threads per block of the 1-D puzzles
	mapTile       = 16   // the 2-D map's blocks are mapTile × mapTile
	transposeTile = 16   // TILE of the transpose (a thread per element)
	paddedTile    = 32   // TILE of the bank-conflict transpose
	paddedRows    = 8    // BLOCK_ROWS: its blocks are paddedTile × paddedRows
	histBins      = 64   // BINS
	histChunk     = 4096 // CHUNK: the values one block counts
)

var (
	sharedNeed = map[string]requirement{
		LangCUDA:   {[]string{"__shared__"}, "this puzzle is about shared memory, and your kernel declares no __shared__ array"},
		LangOpenCL: {[]string{"__local", "local"}, "this puzzle is about local memory, and your kernel declares no __local array"},
	}
	blockDefine = fmt.Sprintf("-DBLOCK=%d", puzzleBlock)
)

// vectorOut is an output of n elements named name.
func vectorOut(name string, n func(s pshape) int) func(s pshape) *elementMap {
	return func(s pshape) *elementMap { return newVectorMap(name, n(s)) }
}

// firstDim is a shape's first dimension.
func firstDim(s pshape) int { return s[0] }

// puzzles is the on-ramp, in order.
var puzzles = []puzzle{
	{
		name: "puzzles/map", file: "p01_map", doc: "out[i] = x[i] + 10, one thread per element exactly (puzzle 1)",
		entry: entry{name: "add_ten", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void add_ten(const float* x, float* out)`,
			LangOpenCL: "__kernel void add_ten(const __global float* x, __global float* out)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: thread i = blockIdx.x * blockDim.x + threadIdx.x stores x[i] + 10",
			LangOpenCL: "// TODO: work-item i = get_global_id(0) stores x[i] + 10 into out[i]",
		},
		dims: []string{"n"}, shapes: []pshape{{1}, {7}, {300}, {1000}, {2310}}, timing: [2]pshape{{1 << 23}, {1 << 20}}, least: pshape{1},
		launch: func(s pshape) geometry {
			b := largestDivisor(s[0], puzzleBlock)
			return line1D(s[0]/b, b)
		},
		layout: vectorOut("out", firstDim),
		make: func(rng *rand.Rand, s pshape) puzzleData {
			x := randomMatrix(rng, s[0])
			want := make([]float64, len(x))
			for i, v := range x {
				want[i] = float64(v + 10)
			}
			return puzzleData{args: []any{x}, want: want, work: 8 * float64(len(x))}
		},
		hint: func(s pshape) string {
			b := largestDivisor(s[0], puzzleBlock)
			return fmt.Sprintf("n=%d is launched as %d blocks of %d threads, one thread per element: the block size is not always %d, so compute i from blockDim.x (or get_global_id(0))",
				s[0], s[0]/b, b, puzzleBlock)
		},
	},
	{
		name: "puzzles/guard", file: "p02_guard", doc: "out[i] = a[i] + b[i] with more threads than elements: the guard (puzzle 2)",
		entry: entry{name: "vector_add", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void vector_add(const float* a, const float* b, int n, float* out)`,
			LangOpenCL: "__kernel void vector_add(const __global float* a, const __global float* b, int n, __global float* out)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: thread i = blockIdx.x * blockDim.x + threadIdx.x stores a[i] + b[i]",
			LangOpenCL: "// TODO: work-item i = get_global_id(0) stores a[i] + b[i] into out[i],",
		},
		dims: []string{"n"}, shapes: []pshape{{0}, {1}, {255}, {257}, {1000}, {4099}}, timing: [2]pshape{{1 << 23}, {1 << 20}},
		defines: []string{blockDefine},
		launch:  func(s pshape) geometry { return line1D(groupsOf(s[0], puzzleBlock), puzzleBlock) },
		layout:  vectorOut("out", firstDim),
		make: func(rng *rand.Rand, s pshape) puzzleData {
			a, b := randomMatrix(rng, s[0]), randomMatrix(rng, s[0])
			want := make([]float64, s[0])
			for i := range want {
				want[i] = float64(a[i] + b[i])
			}
			return puzzleData{args: []any{a, b, s[0]}, want: want, work: 12 * float64(s[0])}
		},
		hint: func(s pshape) string {
			if s[0] == 0 {
				return fmt.Sprintf("n=0: the launch still has one block of %d threads, and none of them has an element", puzzleBlock)
			}
			return blockHint("n", s[0], puzzleBlock, "element")
		},
	},
	{
		name: "puzzles/2d-map", file: "p03_map2d", doc: "out[r][c] = a[r][c] + b[c] on a 2-D grid of 16×16 blocks (puzzle 3)",
		entry: entry{name: "broadcast_add", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void broadcast_add(const float* a, const float* b, int rows, int cols, float* out)`,
			LangOpenCL: "__kernel void broadcast_add(const __global float* a, const __global float* b, int rows, int cols, __global float* out)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: column c = blockIdx.x * blockDim.x + threadIdx.x, row r the same in y;",
			LangOpenCL: "// TODO: column c = get_global_id(0), row r = get_global_id(1); if both are",
		},
		dims:   []string{"rows", "cols"},
		shapes: []pshape{{1, 1}, {1, 37}, {37, 1}, {17, 33}, {100, 130}, {0, 5}}, timing: [2]pshape{{4096, 4096}, {1024, 1024}},
		launch: func(s pshape) geometry { return tiles2D(s[0], s[1], mapTile, mapTile, 1) },
		layout: func(s pshape) *elementMap { return newMatrixMap("out", s[0], s[1]) },
		make: func(rng *rand.Rand, s pshape) puzzleData {
			rows, cols := s[0], s[1]
			a, b := randomMatrix(rng, rows*cols), randomMatrix(rng, cols)
			want := make([]float64, rows*cols)
			for i := range want {
				want[i] = float64(a[i] + b[i%cols])
			}
			return puzzleData{args: []any{a, b, rows, cols}, want: want, work: 4 * float64(2*rows*cols+cols)}
		},
		hint: func(s pshape) string {
			return fmt.Sprintf("rows=%d cols=%d: blocks of %d×%d threads, x along the columns and y along the rows; the last blocks hang over the right and bottom edges, so guard both c < cols and r < rows",
				s[0], s[1], mapTile, mapTile)
		},
	},
	{
		name: "puzzles/stencil", file: "p04_stencil", doc: "out[i] = x[i−1]/4 + x[i]/2 + x[i+1]/4 (zeros outside), through shared memory (puzzle 4)",
		entry: entry{name: "stencil3", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void stencil3(const float* x, int n, float* out)`,
			LangOpenCL: "__kernel void stencil3(const __global float* x, int n, __global float* out)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: the block loads its BLOCK elements and one more on each side (zeros",
			LangOpenCL: "// TODO: the work-group loads its BLOCK elements and one more on each side",
		},
		dims: []string{"n"}, shapes: []pshape{{0}, {1}, {2}, {255}, {256}, {257}, {1000}}, timing: [2]pshape{{1 << 23}, {1 << 20}},
		defines: []string{blockDefine},
		launch:  func(s pshape) geometry { return line1D(groupsOf(s[0], puzzleBlock), puzzleBlock) },
		layout:  vectorOut("out", firstDim),
		make: func(rng *rand.Rand, s pshape) puzzleData {
			n := s[0]
			x := randomMatrix(rng, n)
			at := func(i int) float64 {
				if i < 0 || i >= n {
					return 0
				}
				return float64(x[i])
			}
			want := make([]float64, n)
			for i := range want {
				want[i] = 0.25*at(i-1) + 0.5*at(i) + 0.25*at(i+1)
			}
			return puzzleData{args: []any{x, n}, want: want, work: 8 * float64(n)}
		},
		needs: sharedNeed,
		hint: func(s pshape) string {
			return fmt.Sprintf("n=%d: element 0 and element n−1 have a neighbour outside x, which counts as 0; a block's tile needs the element before its first and after its last (the halo), which belong to the neighbouring blocks; %s",
				s[0], blockHint("n", max(s[0], 1), puzzleBlock, "element"))
		},
		contrasts: []contrast{{name: "without shared memory (three loads per element)", file: "p04_stencil_global"}},
	},
	{
		name: "puzzles/warp-reduce", file: "p05_warp_sum", doc: "sums[w] = the sum of x[32w .. 32w+31]: CUDA with warp shuffles, OpenCL in local memory (puzzle 5)",
		entry: entry{name: "warp_sum", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void warp_sum(const float* x, int n, float* sums)`,
			LangOpenCL: "__kernel void warp_sum(const __global float* x, int n, __global float* sums)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: thread i = blockIdx.x * blockDim.x + threadIdx.x holds v = x[i] (0 past",
			LangOpenCL: "// TODO: work-item i = get_global_id(0) puts x[i] (0 past n) into a __local",
		},
		dims: []string{"n"}, shapes: []pshape{{0}, {1}, {31}, {33}, {255}, {257}, {1000}}, timing: [2]pshape{{1 << 23}, {1 << 20}},
		defines: []string{blockDefine},
		launch:  func(s pshape) geometry { return line1D(groupsOf(s[0], puzzleBlock), puzzleBlock) },
		layout:  vectorOut("sums", func(s pshape) int { return ceilDiv(s[0], 32) }),
		make:    func(rng *rand.Rand, s pshape) puzzleData { return segmentSums(randomMatrix(rng, s[0]), 32) },
		needs: map[string]requirement{
			LangCUDA:   {[]string{"__shfl"}, "this puzzle is about warp shuffles, and your kernel calls no __shfl_*_sync: add the warp's values with __shfl_down_sync, without shared memory"},
			LangOpenCL: sharedNeed[LangOpenCL],
		},
		hint: func(s pshape) string {
			n := s[0]
			h := fmt.Sprintf("n=%d makes %d sums of 32 elements", n, ceilDiv(n, 32))
			if n%32 != 0 {
				h += fmt.Sprintf("; the last has only %d: the threads past n add 0, and every thread of the warp takes part in every shuffle", n%32)
			}
			return h
		},
	},
	{
		name: "puzzles/block-reduce", file: "p06_block_sum", doc: "sums[row] = the sum of a row, one block of 256 per row, through shared memory (puzzle 6)",
		entry: entry{name: "row_sum", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void row_sum(const float* x, int width, float* sums)`,
			LangOpenCL: "__kernel void row_sum(const __global float* x, int width, __global float* sums)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: block row = blockIdx.x sums x[row * width ...]: each thread a strided",
			LangOpenCL: "// TODO: work-group row = get_group_id(0) sums x[row * width ...]: each",
		},
		dims:   []string{"rows", "width"},
		shapes: []pshape{{1, 1}, {3, 37}, {5, 255}, {4, 257}, {2, 4100}, {3, 0}}, timing: [2]pshape{{8192, 1024}, {1024, 1024}}, least: pshape{1, 0},
		defines: []string{blockDefine},
		launch:  func(s pshape) geometry { return line1D(s[0], puzzleBlock) },
		layout:  vectorOut("sums", firstDim),
		make: func(rng *rand.Rand, s pshape) puzzleData {
			rows, width := s[0], s[1]
			d := segmentSums(randomMatrix(rng, rows*width), width)
			if width == 0 { // empty rows sum to 0
				d.want, d.tol = make([]float64, rows), make([]float64, rows)
			}
			d.args = []any{d.args[0], width}
			return d
		},
		needs: sharedNeed,
		hint: func(s pshape) string {
			switch w := s[1]; {
			case w == 0:
				return "width=0: every row is empty, and its sum is 0"
			case w < puzzleBlock:
				return fmt.Sprintf("width=%d is less than the block's %d threads: most threads have no element, and their partial sums must be 0", w, puzzleBlock)
			default:
				return fmt.Sprintf("width=%d: each of the block's %d threads sums the elements i = tid, tid + %d, ... below width, and the tree adds all %d partial sums", w, puzzleBlock, puzzleBlock, puzzleBlock)
			}
		},
	},
	{
		name: "puzzles/scan", file: "p07_scan", doc: "out[i] = x[0] + … + x[i] (ints), one block walking the array in chunks of 256 (puzzle 7)",
		entry: entry{name: "prefix_sum", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void prefix_sum(const int* x, int n, int* out)`,
			LangOpenCL: "__kernel void prefix_sum(const __global int* x, int n, __global int* out)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: one block of BLOCK threads walks x in chunks of BLOCK. Each chunk is",
			LangOpenCL: "// TODO: one work-group of BLOCK work-items walks x in chunks of BLOCK. Each",
		},
		dims: []string{"n"}, shapes: []pshape{{0}, {1}, {255}, {256}, {257}, {1000}, {5000}}, timing: [2]pshape{{1 << 20}, {1 << 16}},
		defines: []string{blockDefine}, intOut: true,
		launch: func(s pshape) geometry { return line1D(1, puzzleBlock) },
		layout: vectorOut("out", firstDim),
		make: func(rng *rand.Rand, s pshape) puzzleData {
			x, want := make([]int32, s[0]), make([]float64, s[0])
			var sum int32
			for i := range x {
				x[i] = int32(rng.IntN(10))
				sum += x[i]
				want[i] = float64(sum)
			}
			return puzzleData{args: []any{x, s[0]}, want: want, work: 8 * float64(s[0])}
		},
		needs: sharedNeed,
		hint: func(s pshape) string {
			return fmt.Sprintf("n=%d is %d chunks of %d, the last with %d elements: each chunk's scan adds the total of all the chunks before it, and the items past n add 0",
				s[0], ceilDiv(s[0], puzzleBlock), puzzleBlock, s[0]-(ceilDiv(s[0], puzzleBlock)-1)*puzzleBlock)
		},
	},
	transposePuzzle("puzzles/transpose", "p08_transpose", "out = inᵀ through a 16×16 tile in shared memory: coalesced reads and writes (puzzle 8)",
		map[string]string{
			LangCUDA:   "// TODO: the block reads its TILE×TILE tile of in, row by row (coalesced),",
			LangOpenCL: "// TODO: the work-group reads its TILE×TILE tile of in, row by row",
		}, transposeTile, transposeTile, []contrast{{name: "naive (strided writes)", file: "p08_transpose_naive"}}),
	transposePuzzle("puzzles/bank-conflicts", "p09_bank_conflicts", "out = inᵀ through a 32×32 tile padded against bank conflicts, 32×8 threads per tile (puzzle 9)",
		map[string]string{
			LangCUDA:   "// TODO: blocks of TILE × BLOCK_ROWS threads (32×8) move a TILE×TILE tile: each",
			LangOpenCL: "// TODO: work-groups of TILE × BLOCK_ROWS work-items (32×8) move a TILE×TILE",
		}, paddedTile, paddedRows, []contrast{{name: "the same tile unpadded (bank conflicts)", file: "p09_bank_conflicts", options: []string{"-DPAD=0"}}}),
	{
		name: "puzzles/histogram", file: "p10_histogram", doc: "hist[b][v] = how often v occurs in block b's chunk of 4096 values, with atomics in shared memory (puzzle 10)",
		entry: entry{name: "histogram", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void histogram(const int* values, int n, int* hist)`,
			LangOpenCL: "__kernel void histogram(const __global int* values, int n, __global int* hist)",
		}},
		todo: map[string]string{
			LangCUDA:   "// TODO: block b counts values[b * CHUNK ... (b + 1) * CHUNK), those below n, in",
			LangOpenCL: "// TODO: work-group b counts values[b * CHUNK ... (b + 1) * CHUNK), those below",
		},
		dims: []string{"n"}, shapes: []pshape{{0}, {1}, {4095}, {4097}, {10000}}, timing: [2]pshape{{1 << 23}, {1 << 20}},
		defines: []string{blockDefine, fmt.Sprintf("-DBINS=%d", histBins), fmt.Sprintf("-DCHUNK=%d", histChunk)}, intOut: true,
		launch: func(s pshape) geometry { return line1D(groupsOf(s[0], histChunk), puzzleBlock) },
		layout: func(s pshape) *elementMap { return newMatrixMap("hist", groupsOf(s[0], histChunk), histBins) },
		make: func(rng *rand.Rand, s pshape) puzzleData {
			n := s[0]
			values, want := make([]int32, n), make([]float64, groupsOf(n, histChunk)*histBins)
			for i := range values {
				v := 7 // half the values fall into one bin: the atomics contend
				if rng.IntN(2) == 0 {
					v = rng.IntN(histBins)
				}
				values[i] = int32(v)
				want[i/histChunk*histBins+v]++
			}
			return puzzleData{args: []any{values, n}, want: want, work: 4 * float64(n+len(want))}
		},
		needs: map[string]requirement{
			LangCUDA:   {[]string{"atomic"}, "this puzzle is about atomics, and your kernel calls no atomic function: count with atomicAdd on a __shared__ histogram"},
			LangOpenCL: {[]string{"atomic_", "atom_"}, "this puzzle is about atomics, and your kernel calls no atomic function: count with atomic_inc on a __local histogram"},
		},
		hint: func(s pshape) string {
			n, blocks := s[0], groupsOf(s[0], histChunk)
			return fmt.Sprintf("n=%d: %d blocks, each storing all %d bins of its chunk (0 for a bin no value fell into); the last chunk has %d values, and the %d threads of a block are more than the %d bins",
				n, blocks, histBins, n-(blocks-1)*histChunk, puzzleBlock, histBins)
		},
	},
}

// transposePuzzle is out = inᵀ (in is rows × cols, out cols × rows) with
// tiles of tile × tile elements, moved by blocks of tile × blockRows
// threads.
func transposePuzzle(name, file, doc string, todo map[string]string, tile, blockRows int, contrasts []contrast) puzzle {
	defines := []string{fmt.Sprintf("-DTILE=%d", tile)}
	if blockRows != tile {
		defines = append(defines, fmt.Sprintf("-DBLOCK_ROWS=%d", blockRows))
	}
	return puzzle{
		name: name, file: file, doc: doc, todo: todo,
		entry: entry{name: "transpose", decl: map[string]string{
			LangCUDA:   `extern "C" __global__ void transpose(const float* in, int rows, int cols, float* out)`,
			LangOpenCL: "__kernel void transpose(const __global float* in, int rows, int cols, __global float* out)",
		}},
		dims:   []string{"rows", "cols"},
		shapes: []pshape{{1, 1}, {1, 37}, {37, 1}, {17, 33}, {100, 130}, {64, 96}, {0, 5}}, timing: [2]pshape{{4096, 4096}, {1024, 1024}},
		defines: defines,
		launch:  func(s pshape) geometry { return tiles2D(s[0], s[1], tile, blockRows, tile/blockRows) },
		layout:  func(s pshape) *elementMap { return newMatrixMap("out", s[1], s[0]) },
		make: func(rng *rand.Rand, s pshape) puzzleData {
			rows, cols := s[0], s[1]
			in := randomMatrix(rng, rows*cols)
			want := make([]float64, rows*cols)
			for r := range rows {
				for c := range cols {
					want[c*rows+r] = float64(in[r*cols+c])
				}
			}
			return puzzleData{args: []any{in, rows, cols}, want: want, work: 8 * float64(rows*cols)}
		},
		needs: sharedNeed,
		hint: func(s pshape) string {
			h := fmt.Sprintf("rows=%d cols=%d: out is %d×%d, out[c][r] = in[r][c]; tiles of %d×%d hang over the edges, so guard the read (r < rows, c < cols) and the write (in out's own rows and columns)",
				s[0], s[1], s[1], s[0], tile, tile)
			if blockRows != tile {
				h += fmt.Sprintf("; a block has %d×%d threads, so each thread moves %d rows of its tile", tile, blockRows, tile/blockRows)
			}
			return h
		},
		contrasts: contrasts,
	}
}

// segmentSums is the problem of summing x in segments of size elements
// (the last may be shorter), each sum to a tolerance of its terms' float32
// roundings.
func segmentSums(x []float32, size int) puzzleData {
	var want, tol []float64
	for lo := 0; lo < len(x); lo += size {
		var sum, sumAbs float64
		for _, v := range x[lo:min(lo+size, len(x))] {
			sum += float64(v)
			sumAbs += math.Abs(float64(v))
		}
		want, tol = append(want, sum), append(tol, float64(size)*math.Ldexp(1, -22)*sumAbs)
	}
	return puzzleData{args: []any{x, len(x)}, want: want, tol: tol, work: 4 * float64(len(x)+len(want))}
}

// largestDivisor is the largest divisor of n that is at most limit.
func largestDivisor(n, limit int) int {
	for d := min(n, limit); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}
