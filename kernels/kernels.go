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

// A Step is one kernel file of an optimization ladder: a numbered file
// that opens with a comment saying the idea, the traffic it saves and
// what it costs.
type Step struct {
	Name string // the step, e.g. "03_smem_tiling" or "spmv_02_vector"
	File string // its file, e.g. "gemm/03_smem_tiling.cu"
	Code string
}

// Steps lists the numbered files of a ladder in order: those in dir whose
// name is prefix, two digits, '_' and a name ("spmv_01_scalar" for prefix
// "spmv_"). Headers (.cuh) are not steps.
func (f Family) Steps(dir, prefix string) ([]Step, error) {
	var steps []Step
	for _, name := range f.Names() {
		d, base := path.Split(name)
		rest, ok := strings.CutPrefix(base, prefix)
		if path.Clean(d) != path.Clean(dir) || !ok || len(rest) < 4 || rest[2] != '_' || !isDigit(rest[0]) || !isDigit(rest[1]) {
			continue
		}
		code, err := f.Source(name)
		if err != nil {
			return nil, err
		}
		steps = append(steps, Step{Name: base, File: name + f.Ext, Code: code})
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("kernels: no %s steps %s/%sNN_* (have: %s)", f.Dir, dir, prefix, strings.Join(f.Names(), ", "))
	}
	return steps, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Header returns the comment that opens a source file, without the
// comment markers (after a Go file's package clause).
func Header(code string) string {
	var out []string
	for _, l := range strings.Split(code, "\n") {
		t := strings.TrimSpace(l)
		if len(out) == 0 && (t == "" || strings.HasPrefix(t, "package ")) {
			continue
		}
		if !strings.HasPrefix(t, "//") {
			break
		}
		out = append(out, strings.TrimSpace(strings.TrimPrefix(t, "//")))
	}
	return strings.Join(out, "\n")
}
