package gemm

import (
	"embed"
	"fmt"
)

// The CPU steps' Go files, so that a notebook can show a step's code the way
// it shows a kernel file.
//
//go:embed cpu_01_naive_ijk.go cpu_02_loop_order_ikj.go cpu_03_transposed_b.go cpu_04_cache_blocking.go cpu_05_parallel_blocking.go cpu_06_register_kernel.go cpu_07_archsimd.go
var cpuFiles embed.FS

// cpuSource returns the Go file of CPU step name ("01_naive_ijk").
func cpuSource(name string) (file, code string, err error) {
	file = "cpu_" + name + ".go"
	b, err := cpuFiles.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("gemm: %s is a library call, with no source here", name)
	}
	return "engine/gemm/" + file, string(b), nil
}
