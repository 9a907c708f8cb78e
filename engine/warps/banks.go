package warps

import (
	"fmt"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// The bank-conflict experiment: lane i of each 32-lane group reads word
// i*(s+p) + k of its group's tile in shared (CUDA) or __local (OpenCL) memory,
// R times. See kernels/cuda/warps/banks.cu for the claim and the design.

// banksStrides and banksPads are the -DS and -DP values.
var (
	banksStrides = []int{1, 2, 4, 8, 16, 32}
	banksPads    = []int{0, 1, 2, 4, 8}
)

const (
	banksCount = 32 // banks of 4 bytes, and lanes per warp
	banksBlock = 256
)

func init() {
	bench.Register(bench.Suite{
		Name: "banks",
		Doc: "Shared/__local memory bank conflicts: lane i of a warp reads word i*(s+p)+k of a 32-row tile whose rows are " +
			"s floats plus p of padding, R times (R = 1024 on GPUs, 64 on CPU-type devices), and writes the sum. With 32 banks " +
			"of 4 bytes, word w is in bank w mod 32, so one warp's read is a gcd(s+p, 32)-way conflict (param \"ways\"): " +
			"s32_p0 is 32-way (every lane in one bank, 32 replays), s32_p1 is 1-way (row 33: lane i in bank i+k), s32_p4 is 4-way " +
			"(row 36), s16_p4 4-way (row 20: the devlog's \"+4 removes the conflict\" holds only for rows of 28 mod 32 words; any odd " +
			"row width is conflict-free). On a GPU the time should follow ways; PoCL's CPU device has no banks, there the stride " +
			"only changes cache behaviour. Sizes are work-items (1M). Baseline s1_p0.",
		Sizes: func(engine.Info) []string { return []string{"1M"} },
		Cases: gpuSuite(banksBuild),
	})
}

// banksVariant names a stride and padding, e.g. "s32_p4".
func banksVariant(s, p int) string { return fmt.Sprintf("s%d_p%d", s, p) }

// banksWays is the n-way conflict of one warp reading word lane*(s+p): the
// largest number of distinct 4-byte words that fall in one of the 32 banks.
func banksWays(s, p int) int {
	words := map[int]map[int]bool{}
	for lane := range banksCount {
		w := lane * (s + p)
		b := w % banksCount
		if words[b] == nil {
			words[b] = map[int]bool{}
		}
		words[b][w] = true
	}
	ways := 0
	for _, ws := range words {
		ways = max(ways, len(ws))
	}
	return ways
}

// banksReps is R: enough reads that shared traffic dominates on a GPU, few
// enough that PoCL finishes 30 variants in seconds.
func banksReps(dev engine.Info) int {
	if cpuLike(dev) {
		return 64
	}
	return 1024
}

// banksTile is the tile a group reads: 32 rows of s+p small integers, so that
// every sum is exact.
func banksTile(row int) []float32 {
	t := make([]float32, banksCount*row)
	for j := range t {
		t[j] = float32(j*7%13 + 1)
	}
	return t
}

// banksRef is the kernel's output for one lane of every group.
func banksRef(tile []float32, s, p, reps int) []float32 {
	row := s + p
	out := make([]float32, banksCount)
	for lane := range out {
		var acc float32
		for r := range reps {
			acc += tile[lane*row+(r&(s-1))]
		}
		out[lane] = acc
	}
	return out
}

func banksBuild(g *gpu, dev *engine.Device, size string) ([]bench.Case, error) {
	n, err := occupancyCount(size)
	if err != nil {
		return nil, err
	}
	n = roundUp(n, banksBlock)
	if err := checkArrays(dev, "banks", size, 3*uint64(n), uint64(n),
		"the NaNs that reset the output, the output read back and the expected output", "the output"); err != nil {
		return nil, err
	}
	reps := banksReps(dev.Info)
	limit := 0 // static shared memory per block
	if g.cu != nil {
		limit = g.cu.Properties().SharedPerBlock
	} else {
		info, err := g.cl.Device().Info()
		if err != nil {
			return nil, err
		}
		limit = int(info.LocalMemBytes)
	}
	out, err := g.alloc(n)
	if err != nil {
		return nil, err
	}
	var cases []bench.Case
	for _, s := range banksStrides {
		for _, p := range banksPads {
			row := s + p
			tileBytes := 4 * (banksBlock / banksCount) * banksCount * row
			if tileBytes > limit {
				continue // skipped, not failed
			}
			tile := banksTile(row)
			in, err := upload(g, tile)
			if err != nil {
				return nil, err
			}
			k, err := g.kernel("banks", "banks", fmt.Sprintf("-DS=%d", s), fmt.Sprintf("-DP=%d", p))
			if err != nil {
				return nil, fmt.Errorf("banks s=%d p=%d: %w", s, p, err)
			}
			lanes := banksRef(tile, s, p, reps)
			cases = append(cases, bench.Case{
				Variant: banksVariant(s, p), Baseline: s == 1 && p == 0,
				Params: bench.Params{"stride": s, "pad": p, "ways": banksWays(s, p), "reps": reps, "work_items": n,
					"tile_bytes": tileBytes, "shared_bytes": 4 * n * reps},
				Flops: float64(n * reps),
				Reset: func() error { return occupancyWrite(g, out, occupancyNaNs(n)) },
				Run: func() (time.Duration, error) {
					return g.launch(k, []int{n}, []int{banksBlock}, 0, in, out, reps)
				},
				Check: func() (bench.Checked, error) {
					got, err := g.read(out, n)
					if err != nil {
						return bench.Checked{}, err
					}
					want := make([]float32, n)
					for i := range want {
						want[i] = lanes[i%banksCount]
					}
					return bench.Compare(got, want), nil
				},
				Tol: 0,
			})
		}
	}
	return cases, nil
}
