package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/nb/jupyter"
)

// nbrunCmd executes notebooks through the GoNB kernel, without Python
// Jupyter, and writes the executed copies (with their outputs) into --out.
// It fails if any cell fails, naming the notebook, the cell and the error.
func nbrunCmd(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("nbrun", stderr)
	outDir := fs.String("out", ".", "write the executed notebooks into this folder")
	timeout := numberFlag(fs, "timeout", 15*time.Minute, durations, "time limit per cell")
	gonb := fs.String("gonb", "", "the GoNB binary (default: $GPULAB_ROOT/.tools/bin/gonb, else gonb on PATH)")
	logPath := fs.String("log", "", "append the kernel's log to this file")
	stamp := fs.Bool("stamp", false, "start the first code cell's output with the commit, the date, the host and the devices")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab nbrun NOTEBOOK.ipynb... [--out DIR] [--timeout 15m] [--gonb PATH] [--log FILE] [--stamp]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	// Flags may follow the notebooks, as in `lab nbrun a.ipynb --out dir`.
	var notebooks []string
	for rest := fs.Args(); len(rest) > 0; rest = fs.Args() {
		notebooks = append(notebooks, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			return usageError{err}
		}
	}
	if len(notebooks) == 0 {
		return usageError{errors.New("no notebook given")}
	}
	outputs := map[string]string{}
	for _, nbPath := range notebooks {
		out := filepath.Join(*outDir, filepath.Base(nbPath))
		if prev, dup := outputs[out]; dup {
			return usageError{fmt.Errorf("%s and %s would both be written to %s", prev, nbPath, out)}
		}
		if same(out, nbPath) {
			return usageError{fmt.Errorf("%s would overwrite itself: pass --out DIR", nbPath)}
		}
		outputs[out] = nbPath
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}

	root, err := gpulabRoot()
	if err != nil {
		return err
	}
	kernel, err := gonbPath(*gonb, root)
	if err != nil {
		return err
	}
	opt := jupyter.Options{
		CellTimeout: *timeout,
		Progress:    stderr,
		Kernel: jupyter.KernelConfig{
			Argv: []string{kernel, "--kernel", "{connection_file}", "--logtostderr"},
			// goimports, which GoNB runs on every cell, is built next to gonb.
			Env: append(os.Environ(), "PATH="+filepath.Dir(kernel)+string(os.PathListSeparator)+os.Getenv("PATH"), "GPULAB_ROOT="+root),
		},
	}
	if *logPath != "" {
		f, openErr := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if openErr != nil {
			return openErr
		}
		defer f.Close()
		log := &logFile{w: f}
		opt.Kernel.Log = log
		defer func() {
			log.mu.Lock()
			defer log.mu.Unlock()
			if log.err != nil && err == nil {
				err = fmt.Errorf("--log %s: %w: the kernel's log is incomplete", *logPath, log.err)
			}
		}()
	}
	if *stamp {
		opt.Stamp = stampText()
	}

	var failed []string
	for _, nbPath := range notebooks {
		out := filepath.Join(*outDir, filepath.Base(nbPath))
		start := time.Now()
		err := nbrunOne(nbPath, out, opt)
		if err != nil {
			fmt.Fprintf(stderr, "FAIL %s (%.1fs)\n%v\n", nbPath, time.Since(start).Seconds(), err)
			failed = append(failed, nbPath)
			continue
		}
		fmt.Fprintf(stdout, "ok   %s -> %s (%.1fs)\n", nbPath, out, time.Since(start).Seconds())
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d notebooks failed: %s", len(failed), len(notebooks), strings.Join(failed, ", "))
	}
	return nil
}

// logFile passes the kernel's output on to w until a write fails (a full
// disk, /dev/full), then keeps its error and discards the rest: the
// kernel, whose output pipe would break, runs on, and nbrun fails at the
// end naming the log.
type logFile struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(p)
	}
	return len(p), nil
}

// nbrunOne executes one notebook and writes the executed copy, also when a
// cell failed (its error is then in the copy).
func nbrunOne(nbPath, out string, opt jupyter.Options) error {
	nb, err := jupyter.ReadNotebook(nbPath)
	if err != nil {
		return err
	}
	runErr := jupyter.Execute(nb, nbPath, opt)
	if err := nb.Write(out); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return runErr
}

// same reports whether two paths name the same existing file.
func same(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// gpulabRoot is $GPULAB_ROOT, else the checkout the current directory is
// in: the notebooks' first cell puts it into their Go workspace.
func gpulabRoot() (string, error) {
	if root := os.Getenv("GPULAB_ROOT"); root != "" {
		return filepath.Abs(root)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module gpulab\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("GPULAB_ROOT is not set and the current directory is not in a gpulab checkout: the notebooks need one")
		}
		dir = parent
	}
}

// gonbPath finds the GoNB kernel: the flag, else the one `make deps` built,
// else gonb on PATH.
func gonbPath(flagValue, root string) (string, error) {
	if flagValue != "" {
		return exec.LookPath(flagValue)
	}
	if p := filepath.Join(root, ".tools", "bin", "gonb"); fileExists(p) {
		return p, nil
	}
	if p, err := exec.LookPath("gonb"); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("no GoNB kernel: neither %s nor gonb on PATH (make deps builds it; or pass --gonb)", filepath.Join(root, ".tools", "bin", "gonb"))
}

func fileExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// stampText says what produced a notebook's outputs: the commit, the date,
// the host and the devices (with the reason a family is missing).
func stampText() string {
	host, _ := os.Hostname()
	var b strings.Builder
	fmt.Fprintf(&b, "executed by lab nbrun · gpulab commit %s · %s · host %s\n", bench.Commit(), time.Now().UTC().Format("2006-01-02 15:04 MST"), host)
	devs, missing := engine.Devices()
	for _, d := range devs {
		fmt.Fprintf(&b, "device %s: %s\n", d.ID, d.Name)
	}
	for _, m := range missing {
		fmt.Fprintf(&b, "no %s\n", m)
	}
	return b.String()
}
