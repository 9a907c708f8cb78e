package lfm2

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// FuzzParseConfig: any config.json either parses into a config that
// validates, or is an error naming config.json; never a panic. What a
// parsed config implies is bounded: its tensors, parameters and cache per
// token are within config.go's bounds, Sizes figures them exactly, and
// listing the tensors (ExpectedTensors) costs memory in proportion to
// their number, so a hostile config cannot make the loader build a huge
// set.
func FuzzParseConfig(f *testing.F) {
	for _, name := range []string{"dense", "moe"} {
		if data, err := os.ReadFile(filepath.Join(fixtures, name, "config.json")); err == nil {
			f.Add(data)
		}
	}
	for _, name := range []string{"lfm2-8b-a1b"} {
		f.Add([]byte(presets[name]))
	}
	f.Add([]byte(tinyHub))
	f.Add([]byte(`{"model_type": "lfm2_moe", "num_hidden_layers": -1}`))
	f.Add([]byte(strings.Replace(tinyHub, `"num_experts": 4`, `"num_experts": 2147483648`, 1)))
	f.Add([]byte(strings.Replace(tinyHub, `"num_experts": 4`, `"num_experts": 1024`, 1)))
	f.Add([]byte(`{"model_type": "lfm2", "hidden_size": 64, "num_hidden_layers": 1000000000, "vocab_size": 10,
	  "num_attention_heads": 1, "num_key_value_heads": 1, "intermediate_size": 8, "full_attn_idxs": [0]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			if !strings.Contains(err.Error(), "config.json") {
				t.Errorf("error %q does not name config.json", err)
			}
			return
		}
		if err := c.validate(); err != nil {
			t.Errorf("a parsed config does not validate: %v", err)
		}
		if c.HeadDim*c.Heads != c.Hidden || len(c.LayerTypes) != c.Layers {
			t.Errorf("parsed config is inconsistent: %+v", c)
		}
		s := c.Sizes()
		if s.Tensors < 1 || s.Tensors > maxTensors || !(s.Params > 0 && s.Params <= maxParams) ||
			!(s.KVBytesPerToken >= 0 && s.KVBytesPerToken <= 8*float64(c.Layers)*float64(c.Hidden)) {
			t.Fatalf("a parsed config implies %+v: over config.go's bounds (%d tensors, %g parameters)", s, maxTensors, float64(maxParams))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		want := ExpectedTensors(c)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 1024*uint64(s.Tensors)+1<<20 {
			t.Errorf("listing %d tensors allocated %d bytes", s.Tensors, got)
		}
		params := 0.0
		for _, shape := range want {
			n := 1.0
			for _, d := range shape {
				n *= float64(d)
			}
			params += n
		}
		if len(want) != s.Tensors || params != s.Params {
			t.Errorf("ExpectedTensors lists %d tensors of %g parameters; Sizes says %d of %g", len(want), params, s.Tensors, s.Params)
		}
	})
}

// FuzzSafetensorsHeader: any file either parses into tensors that lie
// inside its data and tile it, or is an error; never a panic, and nothing
// allocated beyond what the file holds.
func FuzzSafetensorsHeader(f *testing.F) {
	dir := f.TempDir()
	small := filepath.Join(dir, "small.safetensors")
	if err := WriteSafetensors(small, map[string]TensorData{
		"a": {DType: "F32", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		"b": {DType: "BF16", Shape: []int{3}, Data: []float32{1, -2, 0.5}},
		"c": {DType: "F16", Shape: []int{0}},
	}); err != nil {
		f.Fatal(err)
	}
	if data, err := os.ReadFile(small); err == nil {
		f.Add(data)
	}
	// The fixture's header with none of its data: every offset runs past the end.
	if data, err := os.ReadFile(filepath.Join(fixtures, "moe", "model.safetensors")); err == nil && len(data) > 8 {
		n := binary.LittleEndian.Uint64(data)
		if n <= uint64(len(data)-8) {
			f.Add(data[:8+n])
		}
	}
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 8 {
			return // OpenSafetensors refuses these before parsing
		}
		file := &File{Path: "fuzz.safetensors", mem: data}
		if err := file.parse(); err != nil {
			return
		}
		var total int
		for name, tensor := range file.Tensors {
			if tensor.Len() < 0 || len(tensor.Bytes()) > len(data) {
				t.Fatalf("tensor %s: %d bytes from a file of %d", name, len(tensor.Bytes()), len(data))
			}
			total += len(tensor.Bytes())
		}
		headerLen := binary.LittleEndian.Uint64(data)
		if total != len(data)-8-int(headerLen) {
			t.Errorf("tensors hold %d bytes of the %d of data: they do not tile it", total, len(data)-8-int(headerLen))
		}
	})
}
