package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"gpulab/engine"
	"gpulab/engine/cuda"
)

func devicesCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array")
	verbose := fs.Bool("verbose", false, "say why a device family is missing, and where peaks come from")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %v", fs.Args())}
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
