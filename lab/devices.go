package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"gpulab/engine"
	"gpulab/engine/bandwidth"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
)

func devicesCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("devices", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array")
	verbose := fs.Bool("verbose", false, "say why a device family is missing, and where peaks come from")
	remeasure := fs.Bool("remeasure", false, "measure the CPU's bandwidth again (it is measured once per machine and kept)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %v", fs.Args())}
	}
	if *remeasure {
		p, err := engine.RemeasureCPU()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "cpu: %.1f GB/s (copy, read + write), kept in %s\n", p.GBps, engine.CPUPeaksPath())
	}
	devs, missing := engine.Devices()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(devs); err != nil {
			return err
		}
	} else {
		w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tKIND\tUNITS\tCLOCK MHz\tMEMORY\tPEAK GFLOP/s\tPEAK GB/s")
		for _, d := range devs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%.0f\t%.0f\n", d.ID, d.Name, d.Kind, d.ComputeUnits, d.ClockMHz,
				memory(d.MemoryBytes), d.PeakGFLOPS, d.PeakGBps)
		}
		w.Flush()
	}
	if *verbose {
		for _, d := range devs {
			fmt.Fprintf(stderr, "%s peaks: %s\n", d.ID, d.PeakNote)
		}
		for _, m := range missing {
			fmt.Fprintf(stderr, "no %s device: %s\n", m.Kind, m.Reason)
		}
		if v, err := cuda.DriverVersion(); err == nil {
			nvrtc, err := cuda.NVRTCVersion()
			if err != nil {
				nvrtc = err.Error()
			}
			fmt.Fprintf(stderr, "cuda: driver API %d.%d (%s), NVRTC %s\n", v/1000, v%1000/10, cuda.DriverPath(), nvrtc)
		}
	}
	return nil
}

func memory(b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// p2pCmd measures the copy bandwidth between every pair of CUDA GPUs: what a
// pipeline pays to pass activations from one stage to the next.
func p2pCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("p2p", stderr)
	size := numberFlag(fs, "size", 256<<20, sizes(1), "bytes per copy (K, M, G suffixes)")
	reps := numberFlag(fs, "reps", 5, ints(1, maxRuns), "timed copies per pair; the fastest counts")
	jsonOut := fs.String("json", "", "also write the links as JSON here")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %v", fs.Args())}
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return err
	}
	ctxs := make([]*cuda.Context, n)
	for i := range ctxs {
		if ctxs[i], err = cuda.NewContext(i); err != nil {
			return err
		}
	}
	links, err := bandwidth.PeerBandwidth(ctxs, int(*size), *reps)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FROM\tTO\tDIRECT\tGB/s")
	for _, l := range links {
		fmt.Fprintf(w, "%s\t%s\t%v\t%.1f\n", l.Src, l.Dst, l.Direct, l.GBps)
	}
	w.Flush()
	if *jsonOut == "" {
		return nil
	}
	return bench.WriteJSONValue(*jsonOut, links)
}
