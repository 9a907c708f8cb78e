// Command lab is gpulab's command line: list devices and run benchmark suites.
//
//	go run ./lab devices [--json] [--verbose]
//	go run ./lab bench SUITE [--device ID] [--size S,S,...] [--variants V,...] [--json FILE]
//	go run ./lab bench --list
//	go run ./lab report FILE.json ...
package main

import (
	"fmt"
	"io"
	"os"

	"gpulab/engine/interrupt"
	"gpulab/engine/sandbox"
	_ "gpulab/engine/suites" // registers every benchmark suite
)

const usage = `lab: gpulab's command line.

Usage:
  lab devices [--json] [--verbose]     list every usable device and its peaks
  lab p2p [--size 256M] [--json F]      copy bandwidth between every pair of CUDA GPUs
  lab bench SUITE [flags]               run a benchmark suite (lab bench --help)
  lab bench --list                      list the suites
  lab report FILE.json ...              print benchmark records as a Markdown table (for docs/)
  lab plot --x PARAM --out F.png FILE.json ...   draw records as a chart (lab plot --help)
  lab sparse info FILE.mtx [--json]     a Matrix Market file's header, nnz and row lengths
  lab sparse fetch Group/Name           download a SuiteSparse matrix (cached); print its path
  lab sparse phases MATRIX              GPU time of each phase of the SpGEMM steps (lab sparse help)
  lab grade --exercise NAME SUBMISSIONS...   grade exercise submissions (notebooks or sources); CSV and Markdown
  lab profile SUITE --device cuda:N --size S --variant V   one kernel under Nsight Compute, summed up in words (lab profile --help)
  lab nbrun NOTEBOOK... [--out DIR]     execute notebooks with the GoNB kernel, no Python (lab nbrun --help)
  lab kmeans --data X.npy --k K ...     k-means on your data; writes labels.npy, centers.npy (lab kmeans --help)
  lab sqfd --pairs P.json --sim S --alpha A   SQFD of signature pairs, printed as JSON (lab sqfd --help)
  lab lfm2 run|logits|bench --model DIR ...   LFM2 inference: generate, logits, prefill/decode speed (lab lfm2 help)

Device ids select a device everywhere: cpu, opencl:P:D, cuda:N.
`

// main runs the command. A SIGINT or SIGTERM ends it with status 130 or
// 143, once everything it started is stopped and its temporary files and
// directories are removed (package interrupt).
func main() {
	interrupt.Catch("lab", os.Stderr)
	interrupt.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the exit status: 0 success, 1 a
// failure (including benchmark checks that did not pass), 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "devices":
		err = devicesCmd(args[1:], stdout, stderr)
	case "p2p":
		err = p2pCmd(args[1:], stdout, stderr)
	case "bench":
		err = benchCmd(args[1:], stdout, stderr)
	case "report":
		err = reportCmd(args[1:], stdout)
	case "plot":
		err = plotCmd(args[1:], stdout, stderr)
	case "sparse":
		err = sparseCmd(args[1:], stdout, stderr)
	case "kmeans":
		err = kmeansCmd(args[1:], stdout, stderr)
	case "grade":
		err = gradeCmd(args[1:], stdout, stderr)
	case "profile":
		err = profileCmd(args[1:], stdout, stderr)
	case "grade-worker": // the sandboxed worker of lab grade
		err = gradeWorkerCmd(args[1:])
	case sandbox.TrampolineArg: // sets a sandboxed process's limits, then becomes it
		err = sandbox.ExecMain(args[1:])
	case "exercise-fill": // make test: an exercise notebook with the reference solution
		err = exerciseFillCmd(args[1:], stdout, stderr)
	case "copies": // make lab: the student's working copies of the lessons
		err = copiesCmd(args[1:], stdout, stderr)
	case "jupyter-config": // make lab: the notebook's styles, scripts and echarts
		err = jupyterConfigCmd(args[1:], stdout, stderr)
	case "nbrun":
		err = nbrunCmd(args[1:], stdout, stderr)
	case "sqfd":
		err = sqfdCmd(args[1:], stdout, stderr)
	case "lfm2":
		err = lfm2Cmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "lab: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab %s: %v\n", args[0], err)
		if _, ok := err.(usageError); ok {
			return 2
		}
		return 1
	}
	return 0
}

// usageError marks errors in how the command was called.
type usageError struct{ error }
