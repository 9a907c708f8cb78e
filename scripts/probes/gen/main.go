// Command gen writes the generated fixtures of scripts/probe.sh: hostile
// inputs for the lab command that are too big, too binary or too numerous to
// commit. Valid files are made by the engine's own writers (datasets'
// .npy and .fvecs writers, lfm2's random model and safetensors writers) and
// then corrupted, so no file format is implemented twice; only the
// corruptions are written here.
//
//	go run ./scripts/probes/gen DIR
//
// run from the repository root (it reads the LFM2 test fixtures). Every
// fixture is deterministic. Sparse files (a real size over holes, made with
// os.Truncate) take no disk space.
package main

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gpulab/datasets"
	"gpulab/engine/llm/lfm2"
	"gpulab/engine/llm/tokenizer"
)

// The valid bases: blobs of points for k-means, a tiny LFM2 MoE model with
// the tokenizer fixture's vocabulary (the reference logits' last
// dimension), and where the engine's fixtures live.
const (
	points, dims, clusters = 200, 4, 3
	modelVocab             = 700
	lfm2Fixtures           = "datasets/testdata/lfm2"
)

// root is the directory the fixtures are written to.
var root string

// fixture is one generated file or directory: its path under the output
// directory and the function that makes it there.
type fixture struct {
	name string
	make func(path string) error
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/probes/gen DIR")
		os.Exit(2)
	}
	root = os.Args[1]
	for _, f := range fixtures() {
		path := base(f.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fail(err)
		}
		if err := f.make(path); err != nil {
			fail(fmt.Errorf("%s: %w", f.name, err))
		}
	}
}

// fail reports err and exits 1.
func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

// fixtures lists every generated fixture, the valid bases first: later
// ones are made from them.
func fixtures() []fixture {
	fs := []fixture{
		{"points.npy", func(p string) error { return datasets.WriteNPYFloat32(p, blobRows(), points, dims) }},
		{"centers.npy", func(p string) error { return datasets.WriteNPYFloat32(p, blobCenters(), clusters, dims) }},
		{"points.fvecs", func(p string) error { return datasets.WriteFvecs(p, blobRows(), points, dims) }},
		{"big.npy", func(p string) error { // k-means runs long enough to interrupt
			b := datasets.Blobs{N: 100_000, D: 16, K: 8, Seed: 2}
			x := make([]float32, b.N*b.D)
			b.Rows(0, b.N, x)
			return datasets.WriteNPYFloat32(p, x, b.N, b.D)
		}},
		{"model", writeModel},
		{"ref.npy", func(p string) error {
			return datasets.WriteNPYTensor(p, make([]float32, 4*modelVocab), []int{1, 4, modelVocab})
		}},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"empty.fvecs", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"emptydir", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"dir.fvecs", func(p string) error { return os.Mkdir(p, 0o755) }},
	}
	// .npy: every way a header or its data can lie (datasets.OpenNPY's checks).
	for _, c := range []struct{ name, header string }{
		{"garbled", "{'x': [[[[[["},
		{"nested", "{'descr': '<f4', 'fortran_order': False, 'shape': ((200,), (4,)), }"},
		{"dupkey", "{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (200, 4), }"},
		{"extrakey", "{'descr': '<f4', 'fortran_order': False, 'shape': (200, 4), 'x': 1, }"},
		{"unbalanced", "{'descr': '<f4', 'fortran_order': False, 'shape': (200, 4, }"},
		{"object", "{'descr': '|O', 'fortran_order': False, 'shape': (200, 4), }"},
		{"complex", "{'descr': '<c8', 'fortran_order': False, 'shape': (200, 2), }"},
		{"bigendian", "{'descr': '>f4', 'fortran_order': False, 'shape': (200, 4), }"},
		{"fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (200, 4), }"},
		{"negative", "{'descr': '<f4', 'fortran_order': False, 'shape': (-200, -4), }"},
		{"overflow", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }"},
		{"huge-small-file", "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000, 100), }"},
		{"zero-rows", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }"},
		{"rank3", "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 20, 4), }"},
		{"nul", "{'descr': '<f4',\x00'fortran_order': False, 'shape': (200, 4), }"},
	} {
		fs = append(fs, fixture{"npy/" + c.name + ".npy", reheader("points.npy", c.header, 0)})
	}
	fs = append(fs,
		// Headers that claim what a sparse file of the right size holds:
		// the size checks pass and only a memory check can refuse.
		fixture{"npy/huge-sparse.npy", reheader("points.npy",
			"{'descr': '<f4', 'fortran_order': False, 'shape': (100000000, 100), }", 4e10)},
		fixture{"npy/huge-ref-sparse.npy", reheader("ref.npy",
			"{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000, 10000), }", 4e10)},
		fixture{"npy/ref-wrong-shape.npy", func(p string) error { return datasets.WriteNPYTensor(p, make([]float32, 6), []int{1, 2, 3}) }},
		fixture{"npy/truncated.npy", edit("points.npy", func(b []byte) []byte { return b[:len(b)-10] })},
		fixture{"npy/prefix-only.npy", edit("points.npy", func(b []byte) []byte { return b[:9] })},
		fixture{"npy/magic.npy", edit("points.npy", func(b []byte) []byte { return append([]byte("\x93NUMPX"), b[6:]...) })},
		fixture{"npy/version.npy", edit("points.npy", func(b []byte) []byte { b[6] = 9; return b })},
		fixture{"npy/hlen-past-end.npy", edit("points.npy", func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[8:], 0xffff)
			return b
		})},
		fixture{"npy/v2-hlen-huge.npy", edit("points.npy", func(b []byte) []byte { // version 2.0: a uint32 length
			out := append([]byte{}, b[:6]...)
			out = append(out, 2, 0)
			out = binary.LittleEndian.AppendUint32(out, 0xfffffff0)
			return append(out, b[10:]...)
		})},
		fixture{"npy/nan.npy", poisonNPY("points.npy", float32(math.NaN()))},
		fixture{"npy/inf.npy", poisonNPY("points.npy", float32(math.Inf(1)))},
		fixture{"npy/nan-centers.npy", poisonNPY("centers.npy", float32(math.NaN()))},
		fixture{"npy/centers-wrong-dims.npy", func(p string) error { return datasets.WriteNPYFloat32(p, make([]float32, 6), 3, 2) }},
		fixture{"npy/centers-huge-sparse.npy", reheader("centers.npy",
			"{'descr': '<f4', 'fortran_order': False, 'shape': (2500000000, 4), }", 4e10)},
	)
	// .fvecs: a dimension word per vector and no header.
	fs = append(fs,
		fixture{"fvecs/truncated.fvecs", edit("points.fvecs", func(b []byte) []byte { return b[:len(b)-6] })},
		fixture{"fvecs/dim-zero.fvecs", setDim(0)},
		fixture{"fvecs/dim-negative.fvecs", setDim(-1)},
		fixture{"fvecs/dim-huge.fvecs", setDim(math.MaxInt32)},
		fixture{"fvecs/ragged.fvecs", edit("points.fvecs", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[4+4*dims:], dims+1) // vector 1 claims one more value
			return b
		})},
		fixture{"fvecs/huge-sparse.fvecs", func(p string) error { // dimension 1000, 40 GB of holes
			head := binary.LittleEndian.AppendUint32(nil, 1000)
			return writeSparse(p, head, 10_000_000*(4+4*1000))
		}},
		fixture{"fvecs/nan.fvecs", func(p string) error {
			x := blobRows()
			x[7] = float32(math.NaN())
			return datasets.WriteFvecs(p, x, points, dims)
		}},
	)
	// Matrix Market floods: comment and blank lines that a reader must not
	// keep without bound, plain and gzipped, with and without data after.
	const banner, data = "%%MatrixMarket matrix coordinate real general\n", "3 3 2\n1 1 1.5\n3 2 -2\n"
	comments := func(n int) string { return strings.Repeat("% "+strings.Repeat("flood ", 20)+"\n", n) }
	fs = append(fs,
		fixture{"mtx/comment-flood.mtx", text(banner + comments(16_000))}, // 2 MB, no size line
		fixture{"mtx/comment-flood-data.mtx", text(banner + comments(16_000) + data)},
		fixture{"mtx/blank-flood-data.mtx", text(banner + strings.Repeat(" \n", 1_000_000) + data)},
		fixture{"mtx/comments-between-entries.mtx", text(banner + "3 3 2\n1 1 1.5\n" + comments(16_000) + "3 2 -2\n")},
		fixture{"mtx/comment-flood-data.mtx.gz", gzipStream(banner, "% "+strings.Repeat("flood ", 20)+"\n", 1_600_000, data)}, // 200 MB inflated
		fixture{"mtx/blank-flood-data.mtx.gz", gzipStream(banner, "\n", 200_000_000, data)},
		fixture{"mtx/long-line.mtx.gz", gzipStream(banner, "9", 100_000_000, "\n"+data)}, // one 100 MB line
		fixture{"mtx/valid.mtx.gz", gzipStream(banner, "", 0, data)},
		fixture{"mtx/dup.mtx.gz", gzipStream(banner, "", 0, "2 2 3\n1 1 1\n1 1 2\n2 2 3\n")},
		fixture{"mtx/truncated.mtx.gz", edit("mtx/comment-flood-data.mtx.gz", func(b []byte) []byte { return b[:len(b)/2] })},
		fixture{"mtx/not-gzip.mtx.gz", text(banner + data)},
		fixture{"mtx/nul-sparse.mtx", func(p string) error { return writeSparse(p, []byte(banner), 8<<30) }}, // 8 GB of NUL bytes
		fixture{"mtx/huge-size-line.mtx", text("%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 2000000000\n1 1 1\n")},
		fixture{"mtx/huge-array-sparse.mtx", func(p string) error { // an array file's values over 10 GB of holes
			return writeSparse(p, []byte("%%MatrixMarket matrix array real general\n100000 100000\n"), 10<<30)
		}},
	)
	fs = append(fs, fixture{"json/pairs-nested.json", text(strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000))})
	// Files read whole (records, notebooks, a course file), 64 GB over holes:
	// a reader that sizes its buffer by the file's size runs out of memory.
	for _, name := range []string{"json/records-sparse.json", "ipynb/sparse.ipynb", "json/course-sparse.json", "json/pairs-sparse.json"} {
		fs = append(fs, fixture{name, func(p string) error { return writeSparse(p, []byte("["), 64<<30) }})
	}
	// Odd names: the same valid matrix under names with spaces, a newline,
	// non-ASCII letters and a leading dash.
	for _, name := range []string{"with space.mtx", "new\nline.mtx", "ünïcødé ✓.mtx", "-dash.mtx", "tab\tname.mtx"} {
		fs = append(fs, fixture{"odd/" + name, text(banner + data)})
	}
	// LFM2 models: the valid one with a config, safetensors or tokenizer
	// made hostile, each a directory whose other files link to the valid ones.
	for _, c := range []struct{ name, key, value string }{
		{"experts-2e31", "num_experts", "2147483648"},
		{"experts-negative", "num_experts", "-6"},
		{"experts-zero", "num_experts", "0"},
		{"topk-over-experts", "num_experts_per_tok", "100"},
		{"hidden-negative", "hidden_size", "-72"},
		{"hidden-zero", "hidden_size", "0"},
		{"hidden-huge", "hidden_size", "1099511627776"},
		{"hidden-string", "hidden_size", `"72"`},
		{"layers-huge", "num_hidden_layers", "1000000000"},
		{"layer-types-short", "layer_types", `["conv"]`},
		{"layer-types-unknown", "layer_types", `["conv", "full_attention", "conv", "conv", "mamba"]`},
		{"vocab-zero", "vocab_size", "0"},
		{"vocab-huge", "vocab_size", "1000000000000"},
		{"heads-zero", "num_attention_heads", "0"},
		{"kv-heads-zero", "num_key_value_heads", "0"},
		{"kv-heads-not-dividing", "num_key_value_heads", "4"},
		{"conv-cache-zero", "conv_L_cache", "0"},
		{"conv-cache-huge", "conv_L_cache", "2147483648"},
		{"max-positions-negative", "max_position_embeddings", "-1"},
		{"intermediate-huge", "moe_intermediate_size", "1099511627776"},
		{"dense-layers-over", "num_dense_layers", "99"},
		{"norm-eps-negative", "norm_eps", "-1"},
		{"norm-eps-overflow", "norm_eps", "1e999"},
	} {
		fs = append(fs, fixture{"models/cfg-" + c.name, modelWith(setConfig(c.key, c.value), nil)})
	}
	for _, c := range []struct{ name, config string }{
		{"cfg-garbled", `{"model_type": "lfm2_moe", "hidden_size": 7`},
		{"cfg-empty", ``},
		{"cfg-not-object", `[1, 2, 3]`},
		{"cfg-nested", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)},
		{"cfg-nul", "{\"model_type\": \"lfm2\x00_moe\"}"},
	} {
		fs = append(fs, fixture{"models/" + c.name, modelWith(func([]byte) ([]byte, error) { return []byte(c.config), nil }, nil)})
	}
	for _, c := range []struct {
		name   string
		tensor func(lfm2.TensorData) // changes the tensor's values
		which  string                // the tensor's name, or its end
	}{
		{"nan-weight", func(t lfm2.TensorData) { t.Data[len(t.Data)/2] = float32(math.NaN()) }, "layers.2.feed_forward.experts.1.w1.weight"},
		{"inf-norm", func(t lfm2.TensorData) { t.Data[3] = float32(math.Inf(-1)) }, "layers.0.operator_norm.weight"},
		{"overflow-weight", func(t lfm2.TensorData) { // finite, but the activations of layer 1 overflow float32
			for i := range t.Data {
				t.Data[i] = 1e38
			}
		}, "layers.1.self_attn.out_proj.weight"},
	} {
		fs = append(fs, fixture{"models/" + c.name, modelWith(nil, func(_ *lfm2.Config, ts map[string]lfm2.TensorData) error {
			for name, t := range ts {
				if strings.HasSuffix(name, c.which) {
					c.tensor(t)
					return nil
				}
			}
			return fmt.Errorf("no tensor %s", c.which)
		})})
	}
	fs = append(fs,
		fixture{"models/bf16-nan", modelWith(nil, func(c *lfm2.Config, ts map[string]lfm2.TensorData) error {
			for name, t := range ts {
				t.DType = "BF16"
				if strings.HasSuffix(name, "embed_tokens.weight") {
					t.Data[5*c.Hidden] = float32(math.NaN()) // token 5's first value
				}
				ts[name] = t
			}
			return nil
		})},
	)
	for _, c := range []struct {
		name string
		st   func(st []byte) ([]byte, int64) // the hostile model.safetensors, and its size if sparse (0: as is)
	}{
		{"st-truncated", func(b []byte) ([]byte, int64) { return b[:len(b)/2], 0 }},
		{"st-header-only", func(b []byte) ([]byte, int64) { return b[:8+int(binary.LittleEndian.Uint64(b))], 0 }},
		{"st-hlen-huge", func(b []byte) ([]byte, int64) {
			binary.LittleEndian.PutUint64(b, 1<<62)
			return b, 0
		}},
		{"st-hlen-sparse", func(b []byte) ([]byte, int64) { // a 20 GB header over holes
			binary.LittleEndian.PutUint64(b, 20<<30)
			return b[:8], 8 + 20<<30
		}},
		{"st-garbled-header", func(b []byte) ([]byte, int64) { return restHeader(b, `{"a": {"dtype": [[[[`), 0 }},
		{"st-empty", func([]byte) ([]byte, int64) { return nil, 0 }},
		{"st-offsets-past-end", retensor("model.embed_tokens.weight", func(e map[string]any) { e["data_offsets"] = []int64{0, 1 << 40} })},
		{"st-dtype-unknown", retensor("model.embed_tokens.weight", func(e map[string]any) { e["dtype"] = "Q4_K" })},
		{"st-shape-negative", retensor("model.embed_tokens.weight", func(e map[string]any) { e["shape"] = []int64{-modelVocab, -72} })},
		{"st-shape-overflow", retensor("model.embed_tokens.weight", func(e map[string]any) { e["shape"] = []int64{1 << 62, 1 << 62} })},
		{"st-overlap", retensor("model.embedding_norm.weight", func(e map[string]any) { e["data_offsets"] = []int64{0, 72 * 4} })},
		{"st-missing-tensor", retensor("model.embedding_norm.weight", nil)}, // its bytes kept, under another name
	} {
		fs = append(fs, fixture{"models/" + c.name, modelFile("model.safetensors", c.st)})
	}
	fs = append(fs,
		fixture{"models/tok-garbled", modelFile("tokenizer.json", func([]byte) ([]byte, int64) { return []byte(`{"model": {"vocab": {`), 0 })},
		fixture{"models/cfg-sparse", modelFile("config.json", func(b []byte) ([]byte, int64) { return b, 64 << 30 })},
		fixture{"models/tok-sparse", modelFile("tokenizer.json", func(b []byte) ([]byte, int64) { return b, 64 << 30 })},
		fixture{"models/cfg-dev-zero", func(p string) error {
			if err := linkModel(p, "model.safetensors", "tokenizer.json"); err != nil {
				return err
			}
			return os.Symlink("/dev/zero", filepath.Join(p, "config.json"))
		}},
		fixture{"models/cfg-dir", func(p string) error {
			if err := linkModel(p, "model.safetensors", "tokenizer.json"); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(p, "config.json"), 0o755)
		}},
		fixture{"models/no-weights", func(p string) error { return linkModel(p, "config.json", "tokenizer.json") }},
	)
	return fs
}

// blobRows returns the points of the blobs every k-means fixture starts from.
func blobRows() []float32 {
	x := make([]float32, points*dims)
	datasets.Blobs{N: points, D: dims, K: clusters, Seed: 1}.Rows(0, points, x)
	return x
}

// blobCenters returns the blobs' true centers, a valid --init.
func blobCenters() []float32 {
	return datasets.Blobs{N: points, D: dims, K: clusters, Seed: 1}.Centers()
}

// text returns a fixture maker that writes s.
func text(s string) func(string) error {
	return func(p string) error { return os.WriteFile(p, []byte(s), 0o644) }
}

// base returns the path of the fixture name, made before the one that
// needs it.
func base(name string) string { return filepath.Join(root, filepath.FromSlash(name)) }

// edit returns a fixture maker that writes change(bytes of the fixture base).
func edit(from string, change func([]byte) []byte) func(string) error {
	return func(p string) error {
		b, err := os.ReadFile(base(from))
		if err != nil {
			return err
		}
		return os.WriteFile(p, change(b), 0o644)
	}
}

// writeSparse writes head at the start of a file of size bytes whose rest is
// a hole.
func writeSparse(p string, head []byte, size int64) error {
	if err := os.WriteFile(p, head, 0o644); err != nil {
		return err
	}
	return os.Truncate(p, size)
}

// reheader returns a fixture maker that puts header as the header dict of
// the .npy fixture base, keeping its data; with sparse > 0 the data is
// replaced by holes up to that many bytes of data.
func reheader(from, header string, sparse int64) func(string) error {
	return func(p string) error {
		b, err := os.ReadFile(base(from))
		if err != nil {
			return err
		}
		// A version 1.0 prefix: magic, version, uint16 length; the dict is
		// padded with spaces and a newline to a multiple of 64 bytes.
		start := 10 + int(binary.LittleEndian.Uint16(b[8:]))
		h := header + " "
		for (10+len(h)+1)%64 != 0 {
			h += " "
		}
		h += "\n"
		out := append(binary.LittleEndian.AppendUint16(append([]byte{}, b[:8]...), uint16(len(h))), h...)
		if sparse > 0 {
			return writeSparse(p, out, int64(len(out))+sparse)
		}
		return os.WriteFile(p, append(out, b[start:]...), 0o644)
	}
}

// poisonNPY returns a fixture maker that writes the 2-D float32 .npy base
// with its value number 5 set to v.
func poisonNPY(from string, v float32) func(string) error {
	return func(p string) error {
		x, rows, cols, err := datasets.ReadNPYFloat32(base(from))
		if err != nil {
			return err
		}
		x[5] = v
		return datasets.WriteNPYFloat32(p, x, rows, cols)
	}
}

// setDim returns a fixture maker that writes the valid .fvecs with the
// dimension word of its first vector set to d.
func setDim(d int32) func(string) error {
	return edit("points.fvecs", func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b, uint32(d))
		return b
	})
}

// gzipStream returns a fixture maker that writes the gzip of head, then
// fill repeated n times, then tail, compressing as it goes (a flood of
// hundreds of megabytes inflated is a few hundred kilobytes here).
func gzipStream(head, fill string, n int, tail string) func(string) error {
	return func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		z, err := gzip.NewWriterLevel(f, gzip.BestCompression)
		if err != nil {
			f.Close()
			return err
		}
		chunk := strings.Repeat(fill, max(1, (1<<16)/max(1, len(fill))))
		per := len(chunk) / max(1, len(fill))
		_, err = io.WriteString(z, head)
		for left := n; err == nil && left > 0; left -= per {
			_, err = io.WriteString(z, chunk[:min(left, per)*len(fill)])
		}
		if err == nil {
			_, err = io.WriteString(z, tail)
		}
		if err == nil {
			err = z.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

// writeModel writes the valid model: the MoE test fixture's architecture
// with the tokenizer fixture's vocabulary and seeded random weights, and
// that tokenizer.
func writeModel(p string) error {
	tokPath := filepath.Join(lfm2Fixtures, "tokenizer", "tokenizer.json")
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return err
	}
	if tok.VocabSize() != modelVocab {
		return fmt.Errorf("%s has %d ids, the model %d", tokPath, tok.VocabSize(), modelVocab)
	}
	if _, _, err := lfm2.WriteRandomModelWithVocab(p, filepath.Join(lfm2Fixtures, "moe"), modelVocab, 1); err != nil {
		return err
	}
	data, err := os.ReadFile(tokPath)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p, "tokenizer.json"), data, 0o644)
}

// linkModel makes directory p with symbolic links to the valid model's files.
func linkModel(p string, files ...string) error {
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Symlink(filepath.Join("..", "..", "model", f), filepath.Join(p, f)); err != nil {
			return err
		}
	}
	return nil
}

// setConfig returns a config change that sets key to the JSON value.
func setConfig(key, value string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var c map[string]json.RawMessage
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, err
		}
		c[key] = json.RawMessage(value)
		return json.MarshalIndent(c, "", "  ")
	}
}

// modelWith returns a fixture maker for a model directory: with config,
// the valid config.json changed by it and the valid weights linked; with
// weights, the valid config linked and the random weights changed by it
// written in place of the valid ones.
func modelWith(config func([]byte) ([]byte, error), weights func(*lfm2.Config, map[string]lfm2.TensorData) error) func(string) error {
	return func(p string) error {
		src := base("model")
		if config != nil {
			if err := linkModel(p, "model.safetensors", "tokenizer.json"); err != nil {
				return err
			}
			b, err := os.ReadFile(filepath.Join(src, "config.json"))
			if err != nil {
				return err
			}
			if b, err = config(b); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "config.json"), b, 0o644)
		}
		if err := linkModel(p, "config.json", "tokenizer.json"); err != nil {
			return err
		}
		c, err := lfm2.LoadConfig(src)
		if err != nil {
			return err
		}
		ts := lfm2.RandomTensors(c, 1, "F32")
		if err := weights(c, ts); err != nil {
			return err
		}
		return lfm2.WriteSafetensors(filepath.Join(p, "model.safetensors"), ts)
	}
}

// modelFile returns a fixture maker for a model directory whose file name
// is change(the valid one's bytes), sparse up to the size change gives when
// that is not 0, and whose other files link to the valid model's.
func modelFile(name string, change func([]byte) ([]byte, int64)) func(string) error {
	return func(p string) error {
		var others []string
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
			if f != name {
				others = append(others, f)
			}
		}
		if err := linkModel(p, others...); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(base("model"), name))
		if err != nil {
			return err
		}
		b, size := change(b)
		if size > 0 {
			return writeSparse(filepath.Join(p, name), b, size)
		}
		return os.WriteFile(filepath.Join(p, name), b, 0o644)
	}
}

// restHeader returns safetensors bytes b with its header JSON replaced by
// h (padded to 8 bytes, as the format asks) and its data kept.
func restHeader(b []byte, h string) []byte {
	data := b[8+binary.LittleEndian.Uint64(b):]
	for len(h)%8 != 0 {
		h += " "
	}
	return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data...)
}

// retensor returns a safetensors change that edits the header entry of
// tensor name with change or, when change is nil, renames the entry (the
// model then lacks the tensor, and has one it does not expect).
func retensor(name string, change func(map[string]any)) func([]byte) ([]byte, int64) {
	return func(b []byte) ([]byte, int64) {
		var h map[string]map[string]any
		if err := json.Unmarshal(b[8:8+binary.LittleEndian.Uint64(b)], &h); err != nil {
			fail(fmt.Errorf("the engine's safetensors header does not parse: %w", err))
		}
		if change == nil {
			h[name+".renamed"] = h[name]
			delete(h, name)
		} else {
			change(h[name])
		}
		js, err := json.Marshal(h)
		if err != nil {
			fail(err)
		}
		return restHeader(b, string(js)), 0
	}
}
