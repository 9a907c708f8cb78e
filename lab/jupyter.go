package main

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gpulab/engine/atomicfile"
	"gpulab/engine/plot"
)

// jupyterFiles is make lab's Jupyter configuration: custom.css and custom.js
// (styles, and the PNG of a chart where a notebook is not trusted) and the
// notebook's editor settings. lab jupyter-config writes them, with echarts
// for the interactive charts, into the directory make lab gives Jupyter as
// JUPYTER_CONFIG_DIR, apart from the user's own ~/.jupyter.
//
//go:embed jupyter
var jupyterFiles embed.FS

func jupyterConfigCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("jupyter-config", stderr)
	to := fs.String("to", ".build/jupyter", "the Jupyter configuration directory to write")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab jupyter-config [--to .build/jupyter]: write make lab's Jupyter configuration (custom.css, custom.js, echarts, editor settings)")
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return writeJupyterConfig(*to)
}

// writeJupyterConfig writes the configuration into dir, each file atomically.
func writeJupyterConfig(dir string) error {
	write := func(rel string, data []byte) error {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("jupyter-config: %w", err)
		}
		if err := atomicfile.WriteBytes(path, data); err != nil {
			return fmt.Errorf("jupyter-config: %w", err)
		}
		return nil
	}
	err := fs.WalkDir(jupyterFiles, "jupyter", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := jupyterFiles.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("jupyter", path)
		return write(rel, data)
	})
	if err != nil {
		return err
	}
	// The chart's script loads echarts from <base URL>/<plot.EchartsURL>; the
	// notebook serves the config directory's custom/ folder at custom/.
	return write(plot.EchartsURL, plot.EchartsLibrary())
}
