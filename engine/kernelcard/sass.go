package kernelcard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"gpulab/engine/cuda"
	"gpulab/engine/interrupt"
)

// Disassemble prints a CUBIN's SASS with cuobjdump -sass, or nvdisasm
// where only that is there, and says which ran. A machine with neither is
// an error that says so.
func Disassemble(cubin []byte) (sass, tool string, err error) {
	if len(cubin) == 0 {
		return "", "", errors.New("no CUBIN to disassemble")
	}
	dir, remove, err := interrupt.TempDir("gpulab-sass-*")
	if err != nil {
		return "", "", err
	}
	defer remove()
	file := filepath.Join(dir, "kernel.cubin")
	if err := os.WriteFile(file, cubin, 0o600); err != nil {
		return "", "", err
	}
	var missing []error
	for _, t := range []struct {
		name string
		args []string
	}{{"cuobjdump", []string{"-sass", file}}, {"nvdisasm", []string{file}}} {
		path, err := cuda.Tool(t.name)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, t.args...)
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := interrupt.Run(cmd); err != nil {
			return "", "", fmt.Errorf("%s %v: %v: %s", t.name, t.args[:len(t.args)-1], err, bytes.TrimSpace(stderr.Bytes()))
		}
		tool := t.name
		if t.name == "cuobjdump" {
			tool += " -sass"
		}
		return out.String(), tool, nil
	}
	return "", "", fmt.Errorf("no disassembler here: %w", errors.Join(missing...))
}
