package jupyter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"regexp"
	"strings"

	"gpulab/engine/atomicfile"
	"gpulab/engine/readlimit"
)

// Notebook is an nbformat 4 notebook. It is kept as decoded JSON, so that
// every field this package does not know (metadata, cell ids, attachments)
// is written back as it was read.
type Notebook struct {
	doc   map[string]any
	cells []map[string]any
}

// maxNotebookBytes bounds a notebook that ReadNotebook reads: an executed
// lesson with its interactive charts is a few MB.
const maxNotebookBytes = 256 << 20

// ReadNotebook reads an .ipynb file, as ParseNotebook does.
func ReadNotebook(path string) (*Notebook, error) {
	data, err := readlimit.ReadFile(path, "notebook", maxNotebookBytes)
	if err != nil {
		return nil, err
	}
	return ParseNotebook(path, data)
}

// ParseNotebook reads the bytes of an nbformat 4 notebook; name stands for
// it in errors. It checks what this package and its callers rely on: one
// JSON object and nothing after it, nbformat 4, a list of cells, each an
// object whose cell_type is code, markdown or raw and whose source is a
// string or a list of strings. An error names the notebook and the line
// and column, or the cell, where the problem is.
func ParseNotebook(name string, data []byte) (*Notebook, error) {
	nb := &Notebook{}
	if err := decodeJSON(data, &nb.doc); err != nil {
		return nil, fmt.Errorf("%s is not a notebook (JSON): %w", name, err)
	}
	if v, _ := nb.doc["nbformat"].(json.Number); v.String() != "4" {
		return nil, fmt.Errorf("%s: nbformat is %s, want 4", name, jsonKind(nb.doc["nbformat"]))
	}
	cells, ok := nb.doc["cells"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: no list of cells", name)
	}
	for i, c := range cells {
		cell, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: cell #%d is %s, want an object", name, i+1, jsonKind(c))
		}
		if err := checkCell(cell); err != nil {
			return nil, fmt.Errorf("%s: cell #%d (counting from 1, markdown cells included): %w", name, i+1, err)
		}
		nb.cells = append(nb.cells, cell)
	}
	return nb, nil
}

// checkCell checks a cell's type and source.
func checkCell(cell map[string]any) error {
	switch t := cell["cell_type"].(type) {
	case string:
		if t != "code" && t != "markdown" && t != "raw" {
			return fmt.Errorf("cell_type %q, want code, markdown or raw", t)
		}
	default:
		return fmt.Errorf("cell_type is %s, want code, markdown or raw", jsonKind(t))
	}
	switch src := cell["source"].(type) {
	case string:
	case []any:
		for j, line := range src {
			if _, ok := line.(string); !ok {
				return fmt.Errorf("%s cell: source line %d is %s, want a string", cell["cell_type"], j+1, jsonKind(line))
			}
		}
	default:
		return fmt.Errorf("%s cell: source is %s, want a string or a list of strings", cell["cell_type"], jsonKind(src))
	}
	return nil
}

// jsonKind says what kind of JSON value v (decoded with UseNumber) is.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null or missing"
	case bool:
		return fmt.Sprintf("a boolean (%v)", v)
	case json.Number:
		return fmt.Sprintf("a number (%s)", v)
	case string:
		return "a string"
	case []any:
		return "a list"
	}
	return "an object"
}

// decodeJSON decodes the one JSON value in data into v, numbers as
// json.Number so that they are written back as they were. Data after the
// value is an error; errors say where in data they are: "line L, column
// C: ...", or "the end, line L, column C: ..." for data cut short.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var syntax *json.SyntaxError
	switch err := dec.Decode(v); {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s: %w", lineColumn(data, int(syntax.Offset)-1), err) // Offset counts the offending byte
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("the end, %s: %w", lineColumn(data, len(data)), err)
	case err != nil:
		return err
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%s: data after the JSON value", lineColumn(data, len(data)-len(rest)))
	}
	return nil
}

// lineColumn is "line L, column C" (from 1, columns in bytes) of the byte
// at offset (from 0) in data.
func lineColumn(data []byte, offset int) string {
	offset = min(max(offset, 0), len(data))
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	column := offset - bytes.LastIndexByte(data[:offset], '\n')
	return fmt.Sprintf("line %d, column %d", line, column)
}

// Write writes the notebook as Jupyter does (one-space indent, keys sorted,
// no HTML escaping, multi-line texts as lists of lines), atomically.
func (nb *Notebook) Write(path string) error {
	for _, cell := range nb.cells {
		splitLines(cell, "source")
		outs, _ := cell["outputs"].([]any)
		for _, o := range outs {
			out, _ := o.(map[string]any)
			splitLines(out, "text")
			data, _ := out["data"].(map[string]any)
			for mime := range data {
				if strings.HasPrefix(mime, "text/") || mime == "application/javascript" || mime == "image/svg+xml" {
					splitLines(data, mime)
				}
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb.doc); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}

// splitLines stores the string m[key] as a list of lines, each with its
// newline, as nbformat writes source, stream text and textual data.
func splitLines(m map[string]any, key string) {
	s, ok := m[key].(string)
	if !ok {
		return
	}
	lines := []any{}
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		lines = append(lines, s[:i])
		s = s[i:]
	}
	m[key] = lines
}

// cellSource is a cell's source.
func cellSource(cell map[string]any) string { return Source(cell["source"]) }

// Source joins a cell's "source" field, which nbformat stores as one string
// or as a list of lines.
func Source(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []any:
		var b strings.Builder
		for _, line := range s {
			str, _ := line.(string)
			b.WriteString(str)
		}
		return b.String()
	}
	return ""
}

// outputs turns the iopub messages of cell executions into nbformat
// outputs, the way nbclient does: consecutive stream messages of one name
// are merged, update_display_data replaces every output shown with its
// display_id (in any cell), and clear_output empties the cell (at the next
// output, with wait). A cell keeps at most maxCellOutput bytes of output
// messages: a cell that prints without end (for { fmt.Println() }) would
// otherwise fill the memory before its time limit; what comes after is
// counted, and a last stream output says how much was dropped.
type outputs struct {
	cell         []map[string]any            // the outputs of the cell being executed
	tail         *strings.Builder            // the text of cell's last output while it is a stream that may grow
	kept         int                         // bytes of the messages kept for the cell
	dropped      int                         // bytes of the messages dropped for the cell, past maxCellOutput
	displays     map[string][]map[string]any // display_id -> outputs showing it
	clearPending bool
}

// maxCellOutput bounds the bytes of output messages that a cell keeps: a
// lesson's cell with interactive charts takes a few MB.
const maxCellOutput = 64 << 20

func newOutputs() *outputs { return &outputs{displays: map[string][]map[string]any{}} }

// start begins a new cell, whose outputs come after the given ones.
func (o *outputs) start(first ...map[string]any) {
	o.cell, o.tail, o.kept, o.dropped, o.clearPending = first, nil, 0, 0, false
}

// add handles one iopub message of the cell being executed.
func (o *outputs) add(msgType string, raw json.RawMessage) error {
	switch msgType {
	case "stream", "display_data", "execute_result", "update_display_data", "error":
		if o.kept+len(raw) > maxCellOutput {
			o.dropped += len(raw)
			return nil
		}
		o.kept += len(raw)
	}
	var c map[string]any
	if err := decodeJSON(raw, &c); err != nil {
		return fmt.Errorf("%s message content is not JSON: %w", msgType, err)
	}
	var out map[string]any
	switch msgType {
	case "stream":
		text, _ := c["text"].(string)
		if o.clearPending {
			o.clear()
		}
		if n := len(o.cell); n > 0 && o.tail != nil && o.cell[n-1]["name"] == c["name"] {
			o.tail.WriteString(text)
			return nil
		}
		o.flush()
		out = map[string]any{"output_type": "stream", "name": c["name"], "text": ""}
		o.cell = append(o.cell, out)
		o.tail = &strings.Builder{}
		o.tail.WriteString(text)
		return nil
	case "display_data", "execute_result":
		out = map[string]any{"output_type": msgType, "data": c["data"], "metadata": orEmpty(c["metadata"])}
		if msgType == "execute_result" {
			out["execution_count"] = c["execution_count"]
		}
		if id := displayID(c); id != "" {
			o.displays[id] = append(o.displays[id], out)
		}
	case "update_display_data":
		for _, shown := range o.displays[displayID(c)] {
			shown["data"], shown["metadata"] = c["data"], orEmpty(c["metadata"])
		}
		return nil
	case "error":
		out = map[string]any{"output_type": "error", "ename": c["ename"], "evalue": c["evalue"], "traceback": orList(c["traceback"])}
	case "clear_output":
		if wait, _ := c["wait"].(bool); wait {
			o.clearPending = true
		} else {
			o.clear()
		}
		return nil
	default: // execute_input, comm_*, ...: not outputs
		return nil
	}
	if o.clearPending {
		o.clear()
	}
	o.flush()
	o.cell = append(o.cell, out)
	return nil
}

// clear empties the cell's outputs.
func (o *outputs) clear() {
	o.cell, o.tail, o.clearPending = nil, nil, false
}

// flush sets the text of the cell's last output, a stream, from tail, after
// which no message merges into it.
func (o *outputs) flush() {
	if o.tail != nil {
		o.cell[len(o.cell)-1]["text"] = o.tail.String()
		o.tail = nil
	}
}

// list is the cell's outputs as nbformat stores them, with a last stream
// output that says how many bytes were dropped, if any were.
func (o *outputs) list() []any {
	o.flush()
	if o.dropped > 0 {
		o.cell = append(o.cell, map[string]any{"output_type": "stream", "name": "stderr",
			"text": fmt.Sprintf("[lab nbrun kept the first %d MiB of this cell's output and dropped the %d bytes after]\n", maxCellOutput>>20, o.dropped)})
		o.dropped = 0
	}
	l := make([]any, len(o.cell))
	for i, out := range o.cell {
		l[i] = out
	}
	return l
}

func displayID(content map[string]any) string {
	t, _ := content["transient"].(map[string]any)
	id, _ := t["display_id"].(string)
	return id
}

func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

func orList(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

// processFailed matches the last line that GoNB writes to a cell's stderr
// when the cell's program or a `!` shell command failed. GoNB itself reports
// only compile errors as cell errors; a panic, os.Exit(1) or a failing
// shell line would otherwise pass.
var processFailed = regexp.MustCompile(`(?m)^(\^C\n)?(exit status [1-9][0-9]*|signal: .+)$`)

// failure says why a cell failed ("" if it did not): the kernel's error
// reply, or a failed program in its stderr.
func failure(reply executeReply, cellOutputs []map[string]any) string {
	if reply.Status == "error" {
		return reply.Ename + ": " + reply.Evalue
	}
	if reply.Status == "aborted" {
		return "the kernel aborted the execution"
	}
	var stderr strings.Builder
	for _, o := range cellOutputs {
		if o["output_type"] == "stream" && o["name"] == "stderr" {
			stderr.WriteString(o["text"].(string))
		}
	}
	if m := processFailed.FindStringSubmatch(stderr.String()); m != nil {
		return "the cell's program failed: " + m[2]
	}
	return ""
}

var (
	htmlTag    = regexp.MustCompile(`(?s)<style.*?</style>|<[^>]+>`)
	ansiColour = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	blankLines = regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+`)
)

// outputText is the plain text of a cell's outputs, for error reports:
// streams, tracebacks, text/plain, else text/html without its tags (GoNB
// shows compile errors as HTML). Terminal colours and runs of blank lines
// are dropped.
func outputText(cellOutputs []map[string]any) string {
	var b strings.Builder
	for _, o := range cellOutputs {
		switch o["output_type"] {
		case "stream":
			b.WriteString(o["text"].(string))
		case "error":
			tb, _ := o["traceback"].([]any)
			if len(tb) == 0 {
				fmt.Fprintf(&b, "%v: %v\n", o["ename"], o["evalue"])
			}
			for _, l := range tb {
				fmt.Fprintln(&b, l)
			}
		default:
			data, _ := o["data"].(map[string]any)
			if t, ok := data["text/plain"].(string); ok {
				b.WriteString(t + "\n")
			} else if h, ok := data["text/html"].(string); ok {
				b.WriteString(html.UnescapeString(htmlTag.ReplaceAllString(h, "")) + "\n")
			}
		}
	}
	text := ansiColour.ReplaceAllString(b.String(), "")
	return strings.TrimSpace(blankLines.ReplaceAllString(text, "\n"))
}

// A TextCell is a cell of a notebook: its number (from 1, every kind of
// cell counted), its id (may be empty) and its source.
type TextCell struct {
	Number     int
	ID, Source string
}

// Markdown returns the notebook's Markdown cells in order.
func (nb *Notebook) Markdown() []TextCell { return nb.cellsOf("markdown") }

// Code returns the notebook's code cells in order.
func (nb *Notebook) Code() []TextCell { return nb.cellsOf("code") }

// cellsOf returns the cells of one cell_type in order.
func (nb *Notebook) cellsOf(cellType string) []TextCell {
	var out []TextCell
	for i, cell := range nb.cells {
		if cell["cell_type"] == cellType {
			id, _ := cell["id"].(string)
			out = append(out, TextCell{Number: i + 1, ID: id, Source: cellSource(cell)})
		}
	}
	return out
}

// SetSource replaces the source of the cell numbered number (from 1, as in
// TextCell.Number).
func (nb *Notebook) SetSource(number int, src string) error {
	if number < 1 || number > len(nb.cells) {
		return fmt.Errorf("no cell #%d: the notebook has %d cells", number, len(nb.cells))
	}
	nb.cells[number-1]["source"] = src
	return nil
}
