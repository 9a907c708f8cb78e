package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Tool finds one of the toolkit's programs (cuobjdump, nvdisasm,
// compute-sanitizer, ncu): on PATH first, then in the toolkit's bin
// directories ($CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin) and,
// for ncu, Nsight Compute's own directories (/opt/nvidia/nsight-compute/*,
// newest first). A program found nowhere is an error that names every
// place looked in.
func Tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if v := os.Getenv(env); v != "" {
			dirs = append(dirs, filepath.Join(v, "bin"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/bin")
	if name == "ncu" {
		found, _ := filepath.Glob("/opt/nvidia/nsight-compute/*")
		slices.Sort(found)
		slices.Reverse(found)
		dirs = append(dirs, found...)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH, nor in %s", name, strings.Join(dirs, ", "))
}

// SanitizeEnv is the variable that says this process runs under
// compute-sanitizer, set to the tool's name (memcheck, racecheck...), as
// `.gpu/run.sh --sanitize` sets it.
const SanitizeEnv = "GPULAB_SANITIZE"

// Sanitized reports whether SanitizeEnv is set. The sanitizer's tools slow
// kernels down tens to thousands of times (racecheck most, in kernels that
// use shared memory), so the GPU tests then check smaller problems and the
// exercises time small ones.
func Sanitized() bool { return os.Getenv(SanitizeEnv) != "" }
