// Package kernels holds gpulab's device code: CUDA C++ under cuda/ and OpenCL C
// under opencl/, embedded in the binary so that the lab runs from anywhere.
//
// Names are paths without the extension: CUDA("copy") is cuda/copy.cu, and an
// optimization ladder lives in a folder, e.g. CUDA("gemm/03_smem_tiling").
package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed cuda opencl
var files embed.FS

// Family is a kind of kernel source.
type Family struct {
	Dir, Ext string
}

// The two families of device code.
var (
	CUDAFamily   = Family{Dir: "cuda", Ext: ".cu"}
	OpenCLFamily = Family{Dir: "opencl", Ext: ".cl"}
)

// CUDA returns the source of cuda/<name>.cu.
func CUDA(name string) (string, error) { return CUDAFamily.Source(name) }

// OpenCL returns the source of opencl/<name>.cl.
func OpenCL(name string) (string, error) { return OpenCLFamily.Source(name) }

// Source returns the text of one kernel file; an unknown name is an error
// that lists the names that exist.
func (f Family) Source(name string) (string, error) {
	b, err := files.ReadFile(path.Join(f.Dir, name+f.Ext))
	if err != nil {
		return "", fmt.Errorf("kernels: no %s kernel %q (have: %s)", f.Dir, name, strings.Join(f.Names(), ", "))
	}
	return string(b), nil
}

// Names lists the family's kernel names, sorted.
func (f Family) Names() []string {
	var names []string
	fs.WalkDir(files, f.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, f.Ext) {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(p, f.Dir+"/"), f.Ext))
		}
		return nil
	})
	slices.Sort(names)
	return names
}

// Headers returns every file of the family keyed by the name an #include
// uses ("gemm/common.cuh", "gemm/09_warp_tiling.cu"), for NVRTC, which has no
// file system to search.
func (f Family) Headers() map[string]string {
	out := map[string]string{}
	fs.WalkDir(files, f.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := files.ReadFile(p)
			out[strings.TrimPrefix(p, f.Dir+"/")] = string(b)
		}
		return nil
	})
	return out
}
