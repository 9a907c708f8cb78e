package kernelcard

import (
	"math"
	"strings"
	"testing"
)

// hopper are an H100's SM limits as its driver reports them (sm_90).
var hopper = SMLimits{WarpSize: 32, MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32, RegistersPerSM: 65536, RegistersPerBlock: 65536,
	MaxRegistersPerThread: 255, RegisterAllocUnit: 256, SubPartitions: 4,
	SharedPerSM: 233472, SharedPerBlockOptin: 232448, ReservedSharedPerBlock: 1024, SharedAllocUnit: 128}

// TestTheoretical checks the occupancy model on synthetic launches whose
// limits were worked out by hand from cuda_occupancy.h's rules: registers
// go to warps in 256-register units within 4 sub-partitions of 16384;
// shared memory per block adds 1 KiB reserved and rounds to 128 bytes.
func TestTheoretical(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       Resources
		driver  int
		blocks  int
		percent float64
		limiter string
		limits  map[string]int // by resource
	}{
		// 38 regs × 32 = 1216 -> 1280 per warp; 16384/1280 = 12 warps per sub-partition, 48 per SM: 1 block of 32 warps.
		{"register-bound 32×32 block", Resources{Threads: 1024, Registers: 38, StaticShared: 8192}, -1, 1, 50, "registers",
			map[string]int{"registers": 1, "threads": 2, "shared memory": 25, "blocks": 32}},
		// 128 regs: 4096 per warp, 4 warps per sub-partition, 16 per SM: 2 blocks of 8 warps.
		{"register-heavy", Resources{Threads: 256, Registers: 128}, -1, 2, 25, "registers",
			map[string]int{"registers": 2, "threads": 8, "blocks": 32, "shared memory": math.MaxInt32}},
		// 48 KiB + 1 KiB = 50176 bytes (a multiple of 128): 233472/50176 = 4 blocks of 8 warps.
		{"shared-bound", Resources{Threads: 256, Registers: 32, StaticShared: 48 << 10}, -1, 4, 50, "shared memory",
			map[string]int{"shared memory": 4, "registers": 8, "threads": 8, "blocks": 32}},
		// 40 KiB static + 8 KiB dynamic: the same 49 KiB per block as above.
		{"shared-bound, dynamic", Resources{Threads: 256, Registers: 32, StaticShared: 40 << 10, DynamicShared: 8 << 10}, 4, 4, 50, "shared memory",
			map[string]int{"shared memory": 4, "registers": 8, "threads": 8, "blocks": 32}},
		// one warp per block: 32 blocks fill 32 of 64 warps.
		{"block-bound", Resources{Threads: 32, Registers: 16}, -1, 32, 50, "blocks",
			map[string]int{"blocks": 32, "threads": 64, "registers": 128}},
		// 32 regs: 1024 per warp, 16 warps per sub-partition, 64 per SM: 4 blocks of 16 warps, as many as threads allow.
		{"full SM", Resources{Threads: 512, Registers: 32}, -1, 4, 100, "registers and threads",
			map[string]int{"registers": 4, "threads": 4, "blocks": 32}},
		// 1024 threads × 128 registers exceed the 65536 a block may have.
		{"too many registers", Resources{Threads: 1024, Registers: 128}, -1, 0, 0, "registers",
			map[string]int{"registers": 0}},
		// 16 KiB per block and 64 threads: the model fits 13 blocks; a driver that says 10 wins, with a note.
		{"driver disagrees", Resources{Threads: 64, Registers: 32, StaticShared: 16 << 10}, 10, 10, 31.25, "shared memory",
			map[string]int{"shared memory": 13, "threads": 32}},
	} {
		o := Theoretical(hopper, tc.r, tc.driver)
		if o.Blocks != tc.blocks || math.Abs(o.Percent-tc.percent) > 1e-9 || o.Limiter != tc.limiter {
			t.Errorf("%s: %d blocks, %.2f%%, limited by %q; want %d, %.2f%%, %q", tc.name, o.Blocks, o.Percent, o.Limiter, tc.blocks, tc.percent, tc.limiter)
		}
		got := map[string]int{}
		for i, l := range o.Limits {
			got[l.Resource] = l.Blocks
			if i > 0 && l.Blocks < o.Limits[i-1].Blocks {
				t.Errorf("%s: limits not tightest first: %+v", tc.name, o.Limits)
			}
		}
		for res, n := range tc.limits {
			if got[res] != n {
				t.Errorf("%s: %s allows %d blocks, want %d", tc.name, res, got[res], n)
			}
		}
		if disagree := tc.name == "driver disagrees"; disagree != (o.Disagree != "") || disagree && !strings.Contains(o.Disagree, "driver fits 10 blocks per SM where this model of the SM fits 13") {
			t.Errorf("%s: disagreement %q", tc.name, o.Disagree)
		}
	}
}
