package kernelcard

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/cuda"
)

// SMLimits are what one streaming multiprocessor holds, and the
// granularities it allocates in (CUDA's occupancy calculator,
// cuda_occupancy.h).
type SMLimits struct {
	WarpSize               int
	MaxThreadsPerSM        int
	MaxBlocksPerSM         int
	RegistersPerSM         int
	RegistersPerBlock      int
	MaxRegistersPerThread  int // 255
	RegisterAllocUnit      int // registers are given to a warp in units of this many (256)
	SubPartitions          int // the register file is split among this many schedulers (4)
	SharedPerSM            int // bytes, at the largest carveout
	SharedPerBlockOptin    int // the most one block may have
	ReservedSharedPerBlock int // kept by the system for every resident block (1 KiB from sm_80)
	SharedAllocUnit        int // shared memory is given in units of this many bytes (128)
}

// LimitsOf reads an SM's limits from a device's properties; reserved is
// its reserved shared memory per block.
func LimitsOf(p cuda.Properties, reserved int) SMLimits {
	sub := 4
	if p.Major == 6 && p.Minor == 0 {
		sub = 2
	}
	return SMLimits{
		WarpSize: p.WarpSize, MaxThreadsPerSM: p.MaxThreadsPerSM, MaxBlocksPerSM: p.MaxBlocksPerSM,
		RegistersPerSM: p.RegistersPerSM, RegistersPerBlock: p.RegistersPerBlock, MaxRegistersPerThread: 255,
		RegisterAllocUnit: 256, SubPartitions: sub,
		SharedPerSM: p.SharedPerSM, SharedPerBlockOptin: p.SharedPerBlockOptin, ReservedSharedPerBlock: reserved,
		SharedAllocUnit: 128,
	}
}

// A Limit is how many blocks one resource of an SM lets run at once.
type Limit struct {
	Resource string `json:"resource"` // "registers", "shared memory", "threads", "blocks"
	Blocks   int    `json:"blocks"`   // math.MaxInt32 when the kernel uses none of it
	Why      string `json:"why"`      // the arithmetic, e.g. "40 registers × 1024 threads"
}

// Occupancy is a launch's theoretical occupancy: the warps resident on an
// SM as a share of the most it holds.
type Occupancy struct {
	BlockThreads int     `json:"block_threads"`
	Blocks       int     `json:"blocks_per_sm"` // resident blocks: the driver's figure where it was asked
	Warps        int     `json:"warps_per_sm"`
	MaxWarps     int     `json:"max_warps_per_sm"`
	Percent      float64 `json:"percent"`
	Limits       []Limit `json:"limits"`        // every resource's limit, tightest first
	Limiter      string  `json:"limiter"`       // the resources at the tightest limit
	Driver       int     `json:"driver_blocks"` // cuOccupancyMaxActiveBlocksPerMultiprocessor; -1: not asked
	// Disagree says where the model's tightest limit and the driver's
	// figure differ (an architecture the model does not know): the driver
	// is right, and the limits are the model's.
	Disagree string `json:"disagree,omitempty"`
}

// Resources are what one block of a kernel takes from an SM.
type Resources struct {
	Threads       int // per block
	Registers     int // per thread
	StaticShared  int // bytes per block, declared __shared__
	DynamicShared int // bytes per block, given at launch
}

func roundUp(n, unit int) int {
	if unit <= 0 {
		return n
	}
	return (n + unit - 1) / unit * unit
}

// Theoretical is the model of cuda_occupancy.h: each resource's limit on
// resident blocks, the tightest, and the occupancy it gives. driver is the
// occupancy API's answer for the same launch (-1 if not asked), which
// wins where the two differ.
func Theoretical(sm SMLimits, r Resources, driver int) Occupancy {
	o := Occupancy{BlockThreads: r.Threads, Driver: driver, MaxWarps: sm.MaxThreadsPerSM / max(sm.WarpSize, 1)}
	warps := (r.Threads + sm.WarpSize - 1) / max(sm.WarpSize, 1)
	none := math.MaxInt32
	if warps == 0 {
		return o
	}

	threads := Limit{Resource: "threads", Blocks: o.MaxWarps / warps,
		Why: fmt.Sprintf("%d warps of %d per SM", warps, o.MaxWarps)}
	blocks := Limit{Resource: "blocks", Blocks: sm.MaxBlocksPerSM, Why: fmt.Sprintf("at most %d blocks per SM", sm.MaxBlocksPerSM)}

	regs := Limit{Resource: "registers", Blocks: none, Why: "no registers reported"}
	if r.Registers > 0 {
		perWarp := roundUp(r.Registers*sm.WarpSize, sm.RegisterAllocUnit)
		assumed := perWarp * roundUp(warps, sm.SubPartitions) // the hardware's per-block check
		switch {
		case r.Registers > sm.MaxRegistersPerThread:
			regs.Blocks, regs.Why = 0, fmt.Sprintf("%d registers per thread, more than %d", r.Registers, sm.MaxRegistersPerThread)
		case perWarp*warps > sm.RegistersPerBlock || assumed > sm.RegistersPerBlock:
			regs.Blocks, regs.Why = 0, fmt.Sprintf("%d registers × %d threads, more than a block may have (%d): the launch fails", r.Registers, r.Threads, sm.RegistersPerBlock)
		default:
			perSub := sm.RegistersPerSM / sm.SubPartitions / perWarp
			regs.Blocks = perSub * sm.SubPartitions / warps
			regs.Why = fmt.Sprintf("%d registers × %d threads of %d per SM", r.Registers, r.Threads, sm.RegistersPerSM)
		}
	}

	shared := Limit{Resource: "shared memory", Blocks: none, Why: "no shared memory"}
	if own := r.StaticShared + r.DynamicShared; own > 0 {
		perBlock := roundUp(own+sm.ReservedSharedPerBlock, sm.SharedAllocUnit)
		if own > sm.SharedPerBlockOptin {
			shared.Blocks, shared.Why = 0, fmt.Sprintf("%s per block, more than a block may have (%s): the launch fails", bytesText(own), bytesText(sm.SharedPerBlockOptin))
		} else {
			shared.Blocks = sm.SharedPerSM / perBlock
			shared.Why = fmt.Sprintf("%s per block (%s reserved) of %s per SM", bytesText(own), bytesText(sm.ReservedSharedPerBlock), bytesText(sm.SharedPerSM))
		}
	}

	o.Limits = []Limit{regs, shared, threads, blocks}
	slices.SortStableFunc(o.Limits, func(a, b Limit) int { return a.Blocks - b.Blocks })
	o.Blocks = o.Limits[0].Blocks
	var names []string
	for _, l := range o.Limits {
		if l.Blocks == o.Blocks {
			names = append(names, l.Resource)
		}
	}
	o.Limiter = strings.Join(names, " and ")
	if driver >= 0 && driver != o.Blocks {
		o.Disagree = fmt.Sprintf("the driver fits %d blocks per SM where this model of the SM fits %d (limited by %s): the driver's figure counts", driver, o.Blocks, o.Limiter)
		o.Blocks = driver
	}
	o.Warps = o.Blocks * warps
	if o.MaxWarps > 0 {
		o.Percent = 100 * float64(o.Warps) / float64(o.MaxWarps)
	}
	return o
}

// bytesText writes a size in B or KiB: "8 KiB", "9.5 KiB", "600 B".
func bytesText(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n%1024 == 0:
		return fmt.Sprintf("%d KiB", n/1024)
	default:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
}
