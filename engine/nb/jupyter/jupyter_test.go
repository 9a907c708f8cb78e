package jupyter

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWire(t *testing.T) {
	key := []byte("secret")
	frames, id, err := encode(key, "session-1", "execute_request", map[string]any{"code": "x := 1"})
	if err != nil {
		t.Fatal(err)
	}
	// A ROUTER socket puts routing ids before the delimiter.
	routed := append([][]byte{[]byte("peer-id")}, frames...)
	m, err := decode(key, routed)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.MsgID != id || m.Header.MsgType != "execute_request" || m.Header.Session != "session-1" || string(m.Content) != `{"code":"x := 1"}` {
		t.Errorf("decoded %+v", m)
	}
	tampered := append([][]byte{}, frames...)
	tampered[5] = []byte(`{"code":"rm -rf /"}`)
	for _, tc := range []struct {
		name   string
		key    []byte
		frames [][]byte
		want   string
	}{
		{"tampered content", key, tampered, "wrong signature"},
		{"other key", []byte("other"), frames, "wrong signature"},
		{"no delimiter", key, frames[1:], "malformed message"},
		{"too short", key, frames[:4], "malformed message"},
	} {
		if _, err := decode(tc.key, tc.frames); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestOutputs feeds iopub messages to the output collector and compares
// the cell's outputs with what nbclient would store.
func TestOutputs(t *testing.T) {
	type msg struct{ typ, content string }
	for _, tc := range []struct {
		name string
		msgs []msg
		want string
	}{
		{"streams merge by name", []msg{
			{"stream", `{"name":"stdout","text":"a\n"}`}, {"stream", `{"name":"stdout","text":"b\n"}`},
			{"stream", `{"name":"stderr","text":"c\n"}`}, {"stream", `{"name":"stdout","text":"d"}`},
		}, `[{"name":"stdout","output_type":"stream","text":"a\nb\n"},{"name":"stderr","output_type":"stream","text":"c\n"},{"name":"stdout","output_type":"stream","text":"d"}]`},
		{"display data, result and error", []msg{
			{"execute_input", `{"code":"x","execution_count":1}`},
			{"display_data", `{"data":{"image/png":"iVBO","text/plain":"img"},"metadata":{},"transient":{}}`},
			{"execute_result", `{"data":{"text/plain":"42"},"execution_count":3}`},
			{"error", `{"ename":"ERROR","evalue":"bad","traceback":["line 1"]}`},
		}, `[{"data":{"image/png":"iVBO","text/plain":"img"},"metadata":{},"output_type":"display_data"},{"data":{"text/plain":"42"},"execution_count":3,"metadata":{},"output_type":"execute_result"},{"ename":"ERROR","evalue":"bad","output_type":"error","traceback":["line 1"]}]`},
		{"update_display_data replaces the shown block", []msg{
			{"display_data", `{"data":{"text/html":"10%"},"metadata":{},"transient":{"display_id":"bar"}}`},
			{"update_display_data", `{"data":{"text/html":"100%"},"metadata":{},"transient":{"display_id":"bar"}}`},
		}, `[{"data":{"text/html":"100%"},"metadata":{},"output_type":"display_data"}]`},
		{"clear_output now and with wait", []msg{
			{"stream", `{"name":"stdout","text":"gone"}`}, {"clear_output", `{"wait":false}`},
			{"stream", `{"name":"stdout","text":"kept until the next output"}`}, {"clear_output", `{"wait":true}`},
			{"stream", `{"name":"stdout","text":"last"}`},
		}, `[{"name":"stdout","output_type":"stream","text":"last"}]`},
	} {
		o := newOutputs()
		o.start()
		for _, m := range tc.msgs {
			if err := o.add(m.typ, json.RawMessage(m.content)); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		got, _ := json.Marshal(o.list())
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if err := newOutputs().add("stream", json.RawMessage(`{"name":`)); err == nil || !strings.Contains(err.Error(), "stream message content is not JSON") {
		t.Errorf("bad content: %v", err)
	}
}

// TestOutputsBounded: a cell that prints without end keeps the first
// maxCellOutput bytes of messages, in one stream output built without
// copying it again for each message, and a last output says how many bytes
// were dropped; the next cell starts afresh.
func TestOutputsBounded(t *testing.T) {
	line := strings.Repeat("x", 1000) + "\n"
	raw := json.RawMessage(`{"name":"stdout","text":"` + strings.ReplaceAll(line, "\n", `\n`) + `"}`)
	o := newOutputs()
	o.start()
	n := 2 * maxCellOutput / len(raw)
	for range n {
		if err := o.add("stream", raw); err != nil {
			t.Fatal(err)
		}
	}
	l := o.list()
	kept := maxCellOutput / len(raw)
	if len(l) != 2 || len(l[0].(map[string]any)["text"].(string)) != kept*len(line) {
		t.Fatalf("%d outputs, want the stream of %d lines and the note", len(l), kept)
	}
	note := fmt.Sprintf("[lab nbrun kept the first 64 MiB of this cell's output and dropped the %d bytes after]\n", (n-kept)*len(raw))
	if got := l[1].(map[string]any)["text"]; got != note {
		t.Errorf("note %q, want %q", got, note)
	}
	o.start()
	if err := o.add("stream", raw); err != nil {
		t.Fatal(err)
	}
	if l := o.list(); len(l) != 1 || l[0].(map[string]any)["text"] != line {
		t.Errorf("the next cell: %v", l)
	}
}

func TestFailureAndOutputText(t *testing.T) {
	stderr := func(text string) []map[string]any {
		return []map[string]any{{"output_type": "stream", "name": "stderr", "text": text}}
	}
	for _, tc := range []struct {
		name    string
		reply   executeReply
		outputs []map[string]any
		want    string
	}{
		{"ok", executeReply{Status: "ok"}, stderr("warning: slow\n"), ""},
		{"error reply", executeReply{Status: "error", Ename: "ERROR", Evalue: "undefined: x"}, nil, "ERROR: undefined: x"},
		{"panic", executeReply{Status: "ok"}, stderr("panic: boom\n\ngoroutine 1 [running]:\nexit status 2\n"), "the cell's program failed: exit status 2"},
		{"killed", executeReply{Status: "ok"}, stderr("signal: killed\n"), "the cell's program failed: signal: killed"},
		{"exit status 0 is fine", executeReply{Status: "ok"}, stderr("exit status 0\n"), ""},
		{"the phrase inside a line is fine", executeReply{Status: "ok"}, stderr("it said exit status 1 once\n"), ""},
	} {
		if got := failure(tc.reply, tc.outputs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	text := outputText([]map[string]any{
		{"output_type": "display_data", "data": map[string]any{"text/html": "<style>p{}</style><p>\x1b[31mline 3: undefined: x\x1b[0m</p>\n\n\n<p>a &lt; b</p>"}},
		{"output_type": "error", "ename": "ERROR", "evalue": "failed", "traceback": []any{}},
	})
	if want := "line 3: undefined: x\na < b\nERROR: failed"; text != want {
		t.Errorf("outputText = %q, want %q", text, want)
	}
}

func TestNotebookReadWrite(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ipynb")
	os.WriteFile(in, []byte(`{"cells": [
  {"cell_type": "markdown", "id": "m1", "metadata": {"tags": ["x"]}, "source": "# Title <b>\nline 2"},
  {"cell_type": "code", "execution_count": 7, "metadata": {}, "outputs": [], "source": ["a\n", "b"]}],
 "metadata": {"custom": {"n": 12345678901234567890}}, "nbformat": 4, "nbformat_minor": 5}`), 0o644)
	nb, err := ReadNotebook(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := cellSource(nb.cells[1]); got != "a\nb" {
		t.Errorf("code source %q", got)
	}
	out := filepath.Join(dir, "out.ipynb")
	if err := nb.Write(out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	for _, want := range []string{
		`"source": [` + "\n" + `    "# Title <b>\n",` + "\n" + `    "line 2"`, // lines, no HTML escaping
		`"id": "m1"`, `"tags": [`, `"n": 12345678901234567890`, `"execution_count": 7`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("written notebook lacks %q:\n%s", want, data)
		}
	}
}

// TestNotebookErrors: a malformed notebook is an error that names the
// notebook and the place: the line and column, or the cell.
func TestNotebookErrors(t *testing.T) {
	const md = `{"cell_type": "markdown", "metadata": {}, "source": "# T"}`
	cells := func(cell string) string { return `{"nbformat": 4, "cells": [` + md + `, ` + cell + `]}` }
	for _, tc := range []struct{ text, want string }{
		{`{"cells": [`, "bad.ipynb is not a notebook (JSON): the end, line 1, column 12: unexpected EOF"},
		{"{\n \"cells\": [}", "bad.ipynb is not a notebook (JSON): line 2, column 12: invalid character '}'"},
		{`{"nbformat": 3, "worksheets": []}`, "bad.ipynb: nbformat is a number (3), want 4"},
		{`{"cells": []}`, "bad.ipynb: nbformat is null or missing, want 4"},
		{`{"nbformat": 4}`, "bad.ipynb: no list of cells"},
		{`{"nbformat": 4, "cells": [1]}`, "bad.ipynb: cell #1 is a number (1), want an object"},
		{`{"nbformat": 4, "cells": []}` + "\n{}", "bad.ipynb is not a notebook (JSON): line 2, column 1: data after the JSON value"},
		{`{"nbformat": 4, "cells": []}]`, "line 1, column 29: data after"},
		{`[]`, "bad.ipynb is not a notebook (JSON): json: cannot unmarshal array"},
		{cells(`{"cell_type": "code", "source": 42}`), "bad.ipynb: cell #2 (counting from 1, markdown cells included): code cell: source is a number (42), want a string or a list of strings"},
		{cells(`{"cell_type": "code"}`), "cell #2 (counting from 1, markdown cells included): code cell: source is null or missing"},
		{cells(`{"cell_type": "markdown", "source": ["a\n", {"b": 1}]}`), "cell #2 (counting from 1, markdown cells included): markdown cell: source line 2 is an object, want a string"},
		{cells(`{"cell_type": "code", "source": [true]}`), "source line 1 is a boolean (true), want a string"},
		{cells(`{"source": "x"}`), "cell #2 (counting from 1, markdown cells included): cell_type is null or missing, want code, markdown or raw"},
		{cells(`{"cell_type": "heading", "source": "x"}`), `cell_type "heading", want code, markdown or raw`},
	} {
		path := filepath.Join(t.TempDir(), "bad.ipynb")
		os.WriteFile(path, []byte(tc.text), 0o644)
		if _, err := ReadNotebook(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n%v\nwant %q", tc.text, err, tc.want)
		}
	}
	if _, err := ReadNotebook(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}

// FuzzParseNotebook: whatever the bytes, ParseNotebook returns a notebook
// or an error that names it; a notebook it returns is written and read
// back with the same cells.
func FuzzParseNotebook(f *testing.F) {
	root := filepath.Join("..", "..", "..", "notebooks")
	paths, _ := filepath.Glob(filepath.Join(root, "exercises", "*.ipynb"))
	paths = append(paths, filepath.Join(root, "00-devices-and-bandwidth.ipynb"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	if len(paths) < 2 {
		f.Fatalf("no notebooks under %s", root)
	}
	f.Add([]byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {"n": 1e400}, "cells": [{"cell_type": "raw", "source": ["a", "b\n"]}]}`))
	f.Add([]byte(`{"nbformat": 4, "cells": [{"cell_type": "code", "source": 1, "outputs": [{"output_type": "stream", "text": 2}]}]} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		nb, err := ParseNotebook("fuzz.ipynb", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.ipynb") {
				t.Fatalf("error does not name the notebook: %v", err)
			}
			return
		}
		path := filepath.Join(t.TempDir(), "out.ipynb")
		if err := nb.Write(path); err != nil {
			t.Fatal(err)
		}
		back, err := ReadNotebook(path)
		if err != nil {
			t.Fatalf("reading back what Write wrote: %v", err)
		}
		if len(back.cells) != len(nb.cells) || !slices.Equal(back.Code(), nb.Code()) || !slices.Equal(back.Markdown(), nb.Markdown()) {
			t.Fatalf("read back %d cells, want %d, or different sources", len(back.cells), len(nb.cells))
		}
	})
}

// gonbKernel returns the kernel configuration for the GoNB that `make deps`
// builds into .tools/bin, or skips the test.
func gonbKernel(t *testing.T) KernelConfig {
	t.Helper()
	root, _ := filepath.Abs(filepath.Join("..", "..", ".."))
	gonb := filepath.Join(root, ".tools", "bin", "gonb")
	if _, err := os.Stat(gonb); err != nil {
		t.Skipf("no GoNB kernel at %s (make deps builds it): %v", gonb, err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: GoNB compiles cells with it")
	}
	return KernelConfig{
		Argv: []string{gonb, "--kernel", "{connection_file}", "--logtostderr"},
		Env:  append(os.Environ(), "PATH="+filepath.Dir(gonb)+":"+os.Getenv("PATH"), "GPULAB_ROOT="+root),
	}
}

// setupCell is the first cell of every gpulab notebook.
const setupCell = "%noautoget\n!*rm -f go.work && go work init && go work use . \"$GPULAB_ROOT\"\n%goworkfix"

// notebook builds a notebook: a markdown cell, the setup cell, then code cells.
func notebook(t *testing.T, code ...string) *Notebook {
	t.Helper()
	cells := []any{
		map[string]any{"cell_type": "markdown", "metadata": map[string]any{}, "source": "# Test"},
		map[string]any{"cell_type": "code", "metadata": map[string]any{}, "outputs": []any{}, "source": setupCell},
	}
	for _, c := range code {
		cells = append(cells, map[string]any{"cell_type": "code", "metadata": map[string]any{}, "outputs": []any{"stale"}, "source": c})
	}
	data, _ := json.Marshal(map[string]any{"cells": cells, "metadata": map[string]any{}, "nbformat": 4, "nbformat_minor": 5})
	path := filepath.Join(t.TempDir(), "nb.ipynb")
	os.WriteFile(path, data, 0o644)
	nb, err := ReadNotebook(path)
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

// TestExecuteGoNB runs a small notebook in GoNB: output, Markdown display
// data (through gpulab's nb package) and the stamp.
func TestExecuteGoNB(t *testing.T) {
	kernel := gonbKernel(t)
	nb := notebook(t, "import \"gpulab/engine/nb\"\n\n%%\nfmt.Println(\"hello\", 6*7)\nnb.Markdown(\"**bold**\")", "", "%%\nfmt.Println(\"second\")")
	if err := Execute(nb, "tiny", Options{Kernel: kernel, CellTimeout: 5 * time.Minute, Stamp: "commit abc"}); err != nil {
		t.Fatal(err)
	}
	outs := func(i int) string {
		b, _ := json.Marshal(nb.cells[i]["outputs"])
		return string(b)
	}
	if got := outs(1); !strings.HasPrefix(got, `[{"name":"stdout","output_type":"stream","text":"commit abc\n`) {
		t.Errorf("setup cell outputs %s, want the stamp first", got)
	}
	// GoNB reads a cell's stdout and its display data from two pipes: their
	// order between each other is not fixed.
	for _, want := range []string{`{"name":"stdout","output_type":"stream","text":"hello 42\n"}`, `{"data":{"text/markdown":"**bold**"},"metadata":{},"output_type":"display_data"}`} {
		if got := outs(2); !strings.Contains(got, want) {
			t.Errorf("cell 3 outputs %s, want %s among them", got, want)
		}
	}
	if got := outs(3); got != `[]` || nb.cells[3]["execution_count"] != nil {
		t.Errorf("an empty cell ran: %s %v", got, nb.cells[3]["execution_count"])
	}
	if got := outs(4); got != `[{"name":"stdout","output_type":"stream","text":"second\n"}]` || nb.cells[4]["execution_count"] != 3 {
		t.Errorf("cell 5: %s, count %v", got, nb.cells[4]["execution_count"])
	}
}

// TestExecuteGoNBFailures: a failing cell stops the notebook with its index
// (markdown cells counted), the reason and its output.
func TestExecuteGoNBFailures(t *testing.T) {
	kernel := gonbKernel(t)
	for _, tc := range []struct {
		name     string
		code     string
		timeout  time.Duration
		reason   string
		inOutput string
	}{
		{"panic", "%%\npanic(\"boom\")", time.Minute, "the cell's program failed: exit status 2", "panic: boom"},
		{"compile error", "%%\nfmt.Println(undefinedThing)", time.Minute, "ERROR", "undefined: undefinedThing"},
		{"os.Exit", "import \"os\"\n\n%%\nos.Exit(3)", time.Minute, "exit status 3", ""},
		{"failing shell line", "!false", time.Minute, "exit status 1", ""},
		{"endless", "import \"time\"\n\n%%\ntime.Sleep(time.Hour)", 5 * time.Second, "did not finish within 5s", ""},
	} {
		nb := notebook(t, "%%\nfmt.Println(\"fine\")", tc.code, "%%\nfmt.Println(\"never runs\")")
		err := Execute(nb, "failing.ipynb", Options{Kernel: kernel, CellTimeout: tc.timeout})
		var cellErr *CellError
		if !errors.As(err, &cellErr) {
			t.Errorf("%s: %v, want a CellError", tc.name, err)
			continue
		}
		if cellErr.Index != 4 || !strings.Contains(cellErr.Reason, tc.reason) || !strings.Contains(cellErr.Output, tc.inOutput) ||
			!strings.Contains(err.Error(), "failing.ipynb: cell #4 (counting from 1, markdown cells included) failed") {
			t.Errorf("%s: %v", tc.name, err)
		}
		if out, _ := json.Marshal(nb.cells[4]["outputs"]); string(out) != "[]" {
			t.Errorf("%s: the cell after the failure has outputs %s", tc.name, out)
		}
	}
}

func TestStartKernelErrors(t *testing.T) {
	if _, err := StartKernel(KernelConfig{}); err == nil || !strings.Contains(err.Error(), "no kernel command line") {
		t.Errorf("empty argv: %v", err)
	}
	if _, err := StartKernel(KernelConfig{Argv: []string{"/no/such/kernel"}}); err == nil || !strings.Contains(err.Error(), `starting the kernel "/no/such/kernel"`) {
		t.Errorf("missing binary: %v", err)
	}
	// A kernel that prints why and exits: the error carries its last words.
	_, err := StartKernel(KernelConfig{Argv: []string{"sh", "-c", "echo cannot read {connection_file} >&2; exit 3"}, StartTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "the kernel exited (exit status 3)") || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("exiting kernel: %v", err)
	}
}
