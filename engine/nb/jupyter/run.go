package jupyter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Options say how to execute a notebook.
type Options struct {
	Kernel KernelConfig
	// CellTimeout bounds each cell (0: no limit).
	CellTimeout time.Duration
	// Stamp, when set, is the first output of the first code cell (stdout
	// text): for example the device and commit that produced the outputs.
	Stamp string
	// Progress, when set, receives a line per cell: index, status, time.
	Progress io.Writer
}

// CellError is a cell that failed: an error reply, a failed program, a
// time limit, or a kernel that died while running it.
type CellError struct {
	Notebook string
	Index    int    // counting from 1, markdown cells included, as Jupyter shows them
	Source   string // the cell's code
	Reason   string // e.g. "the cell's program failed: exit status 2"
	Output   string // the cell's outputs as plain text
}

func (e *CellError) Error() string {
	return fmt.Sprintf("%s: cell #%d (counting from 1, markdown cells included) failed: %s\n"+
		"------------------ source\n%s\n------------------ outputs\n%s\n------------------",
		e.Notebook, e.Index, e.Reason, strings.TrimRight(e.Source, "\n"), e.Output)
}

// Execute runs the code cells of nb in order in a fresh kernel and fills in
// their outputs and execution counts, stopping at the first cell that fails
// (a *CellError; the cells before it, and its own outputs, are kept).
// Markdown and raw cells are left as they are; empty code cells are not
// run. name identifies the notebook in errors.
func Execute(nb *Notebook, name string, opt Options) error {
	for _, cell := range nb.cells {
		if cell["cell_type"] == "code" {
			cell["outputs"], cell["execution_count"] = []any{}, nil
		}
	}
	k, err := StartKernel(opt.Kernel)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer k.Close()
	out := newOutputs()
	stamp := opt.Stamp // for the first code cell
	for i, cell := range nb.cells {
		src := cellSource(cell)
		if cell["cell_type"] != "code" || strings.TrimSpace(src) == "" {
			continue
		}
		if stamp != "" {
			out.start(map[string]any{"output_type": "stream", "name": "stdout", "text": strings.TrimRight(stamp, "\n") + "\n"})
			stamp = ""
		} else {
			out.start()
		}
		start := time.Now()
		reply, err := executeCell(k, src, out, opt.CellTimeout)
		cell["outputs"] = out.list()
		if reply.ExecutionCount > 0 {
			cell["execution_count"] = reply.ExecutionCount
		}
		reason := failure(reply, out.cell)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			reason = fmt.Sprintf("did not finish within %v (the cell time limit)", opt.CellTimeout)
		case err != nil:
			reason = err.Error()
		}
		if opt.Progress != nil {
			status := "ok"
			if reason != "" {
				status = "FAILED"
			}
			fmt.Fprintf(opt.Progress, "  %s cell #%d %s %.1fs\n", name, i+1, status, time.Since(start).Seconds())
		}
		if reason != "" {
			return &CellError{Notebook: name, Index: i + 1, Source: src, Reason: reason, Output: outputText(out.cell)}
		}
	}
	return nil
}

// executeCell runs one cell under the time limit.
func executeCell(k *Kernel, src string, out *outputs, timeout time.Duration) (executeReply, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return k.Execute(ctx, src, out.add)
}
