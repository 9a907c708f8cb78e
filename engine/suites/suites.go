// Package suites registers every benchmark suite of gpulab with engine/bench.
// Importing it for its side effects is what lets bench.Lookup find any suite
// by name: the lab command imports it, and so does engine/nb, so that a
// notebook cell's nb.Run finds a suite even when the cell uses nothing else
// of the suite's package (GoNB drops imports a cell does not use).
package suites

import (
	_ "gpulab/engine/bandwidth"      // copy, vecadd, saxpy
	_ "gpulab/engine/cluster/kmeans" // kmeans
	_ "gpulab/engine/gemm"           // gemm
	_ "gpulab/engine/llm/lfm2"       // lfm2
	_ "gpulab/engine/sparse"         // spmv, spgemm
	_ "gpulab/engine/sqfd"           // sqfd, kmedoids
	_ "gpulab/engine/warps"          // the OpenCL-and-warps experiments
)
