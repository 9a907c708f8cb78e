package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// beecks is the worked example of Beecks, Uysal and Seidl (CIVR 2010):
// SQFD 0.808 with the heuristic similarity, alpha 1 (engine/sqfd works it
// out by hand).
const beecks = `{"c1": [[3, 3], [8, 7]], "w1": [0.5, 0.5], "c2": [[4, 7], [9, 5], [8, 1]], "w2": [0.5, 0.25, 0.25]}`

func pairsFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pairs.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSqfdBeecks: the example, then the pair with itself (0), in order.
func TestSqfdBeecks(t *testing.T) {
	self := `{"c1": [[3, 3], [8, 7]], "w1": [0.5, 0.5], "c2": [[8, 7], [3, 3]], "w2": [0.5, 0.5]}`
	path := pairsFile(t, "["+beecks+", "+self+"]")
	code, stdout, errs := lab("sqfd", "--pairs", path, "--sim", "heuristic", "--alpha", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d []float64
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || len(d) != 2 || math.Abs(d[0]-0.808) >= 5e-4 || math.Abs(d[1]) > 1e-7 {
		t.Errorf("printed %s (%v), want [0.808, 0]", stdout, err)
	}
}

// TestSqfdBeecksGPU: the same on the GPU's kernel (cross_pairs). The pair of
// one signature with its centroids reordered is two signatures there, so its
// distance is float32 rounding near 0, not 0.
func TestSqfdBeecksGPU(t *testing.T) {
	cudatest.Context(t)
	self := `{"c1": [[3, 3], [8, 7]], "w1": [0.5, 0.5], "c2": [[8, 7], [3, 3]], "w2": [0.5, 0.5]}`
	seven := `{"c1": [[1, 2, 3, 4, 5, 6, 7]], "w1": [1], "c2": [[1, 2, 3, 4, 5, 6, 8]], "w2": [2]}`
	path := pairsFile(t, "["+beecks+", "+seven+", "+self+"]")
	code, stdout, errs := lab("sqfd", "--pairs", path, "--sim", "heuristic", "--alpha", "1", "--device", "cuda:0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// seven: weights 1 and 2 as given; S = 1, 4 and 2·1/(1+1) = 1: √(1 + 4 − 2) = √3.
	var d []float64
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || len(d) != 3 || math.Abs(d[0]-0.808) >= 5e-4 || math.Abs(d[1]-math.Sqrt(3)) > 1e-5 || d[2] > 1e-3 {
		t.Errorf("printed %s (%v), want [0.808, 1.732, 0]", stdout, err)
	}
}

func TestSqfdErrors(t *testing.T) {
	pair := func(c1, w1, c2, w2 string) string {
		return `{"c1": ` + c1 + `, "w1": ` + w1 + `, "c2": ` + c2 + `, "w2": ` + w2 + `}`
	}
	files := map[string]string{
		"dim":     "[" + beecks + ", " + pair("[[1, 2]]", "[1]", "[[1, 2, 3]]", "[1]") + "]",
		"weights": "[" + pair("[[1, 2], [3, 4]]", "[1]", "[[1, 2]]", "[1]") + "]",
		"empty":   "[" + beecks + ", " + beecks + ", " + pair("[]", "[]", "[[1]]", "[1]") + "]",
		"nofeat":  "[" + pair("[[]]", "[1]", "[[]]", "[1]") + "]",
		"nan":     "[" + beecks + ", " + pair("[[1, NaN]]", "[1]", "[[1, 2]]", "[1]") + "]",
		"inf":     "[" + pair("[[1, 2]]", "[1]", "[[1, 2]]", "[1e39]") + "]",
		"object":  `{"c1": []}`,
		"after":   "[" + beecks + "] []",
		"after2":  "[" + beecks + "]\n\t]",
		"spaces":  "[" + beecks + "]\n\t \n",
	}
	path := map[string]string{}
	for name, body := range files {
		path[name] = pairsFile(t, body)
	}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--pairs", path["dim"]}, "pair 1 (after the first 100 bytes): c2[0] has 3 features but c1[0] has 2", 1},
		{[]string{"--pairs", path["weights"]}, "pair 0 (after the first 1 bytes): 2 centroids in c1 but 1 weights in w1", 1},
		{[]string{"--pairs", path["empty"]}, "pair 2 (after the first 201 bytes): c1 and c2 need a centroid each, have 0 and 1", 1},
		{[]string{"--pairs", path["nofeat"]}, "pair 0 (after the first 1 bytes): c1[0] has no features", 1},
		{[]string{"--pairs", path["nan"]}, "pair 1 (after the first 100 bytes): invalid character 'N'", 1},
		{[]string{"--pairs", path["after"]}, "data after the array of 1 pairs, which ends after the first 101 bytes", 1},
		{[]string{"--pairs", path["after2"]}, "data after the array of 1 pairs", 1},
		{[]string{"--pairs", t.TempDir()}, "is a directory", 1},
		{[]string{"--pairs", path["inf"]}, "pair 0: sqfd: signature b, centroid 0: the weight is +Inf", 1},
		{[]string{"--pairs", path["object"]}, "want a JSON array of pairs", 1},
		{[]string{"--pairs", filepath.Join(t.TempDir(), "none.json")}, "none.json", 1},
		{[]string{"--pairs", path["dim"], "--device", "opencl:0:0"}, `invalid value "opencl:0:0" for flag -device: want cpu or cuda:N`, 2},
		{[]string{"--pairs", path["dim"], "--device", "cuda:99"}, `unknown device "cuda:99"`, 2},
		{[]string{"--pairs", path["dim"], "--sim", "cosine"}, `invalid value "cosine" for flag -sim: want gaussian or heuristic`, 2},
		{[]string{"--pairs", path["dim"], "--alpha", "0"}, `invalid value "0" for flag -alpha: want a finite number above 0`, 2},
		{[]string{"--sim", "gaussian"}, "--pairs is required", 2},
	} {
		code, stdout, errs := lab(append([]string{"sqfd"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) || stdout != "" {
			t.Errorf("lab sqfd %v: exit %d, %q%s; want exit %d and %q", tc.args, code, errs, stdout, tc.code, tc.want)
		}
	}
}

// TestSqfdTrailingSpace: white space after the array is not data.
func TestSqfdTrailingSpace(t *testing.T) {
	path := pairsFile(t, "["+beecks+"]\n\t \n")
	if code, _, errs := lab("sqfd", "--pairs", path, "--sim", "heuristic"); code != 0 {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// FuzzDecodePairs: whatever the bytes, decodePairs returns signatures or an
// error that names the file, allocating in proportion to the input; what
// it accepts encodes back to pairs that decode the same.
func FuzzDecodePairs(f *testing.F) {
	f.Add([]byte("[" + beecks + "]"))
	f.Add([]byte(`[{"c1": [[1, 2, 3, 4, 5, 6, 7]], "w1": [1], "c2": [[1, 2, 3, 4, 5, 6, 8]], "w2": [2]}, ` + beecks + `]`))
	f.Add([]byte("[" + beecks + "] []"))
	f.Add([]byte("[]"))
	f.Add([]byte(`[{"c1": [[]], "w1": [1], "c2": [[1e39]], "w2": [1]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sigs, dims, err := decodePairs("pairs.json", bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pairs.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(sigs) != 2*len(dims) {
			t.Fatalf("%d signatures for %d pairs", len(sigs), len(dims))
		}
		pairs := []sqfdPair{} // "[]", not "null", for no pairs
		for i, dim := range dims {
			if dim <= 0 || len(sigs[2*i])%(dim+1) != 0 || len(sigs[2*i+1])%(dim+1) != 0 || 4*(len(sigs[2*i])+len(sigs[2*i+1])) > 8*len(data) {
				t.Fatalf("pair %d: %d features, signatures of %d and %d values from %d bytes", i, dim, len(sigs[2*i]), len(sigs[2*i+1]), len(data))
			}
			c1, w1 := unlay(sigs[2*i], dim)
			c2, w2 := unlay(sigs[2*i+1], dim)
			pairs = append(pairs, sqfdPair{c1, w1, c2, w2})
		}
		again, err := json.Marshal(pairs)
		if err != nil { // a value beyond float32 became Inf, which JSON cannot hold
			return
		}
		sigs2, dims2, err := decodePairs("again.json", bytes.NewReader(again))
		if err != nil || !slices.Equal(dims2, dims) || !slices.EqualFunc(sigs2, sigs, slices.Equal) {
			t.Fatalf("decoded back differently (%v)", err)
		}
	})
}

// unlay is signature's inverse: centroid rows and weights.
func unlay(s []float32, dim int) ([][]float64, []float64) {
	var c [][]float64
	var w []float64
	for i := 0; i < len(s); i += dim + 1 {
		row := make([]float64, dim)
		for j := range dim {
			row[j] = float64(s[i+j])
		}
		c, w = append(c, row), append(w, float64(s[i+dim]))
	}
	return c, w
}

// TestBenchAllGPUs: --device all-gpus is the kmedoids suite's, and needs a
// CUDA device.
func TestBenchAllGPUs(t *testing.T) {
	code, _, errs := lab("bench", "copy", "--device", "all-gpus")
	if code != 2 || !strings.Contains(errs, "--device all-gpus is for the kmedoids suite, not copy") {
		t.Errorf("bench copy --device all-gpus: exit %d, %q", code, errs)
	}
	if n, err := cuda.DeviceCount(); err == nil && n > 0 {
		return
	}
	code, _, errs = lab("bench", "kmedoids", "--device", "all-gpus", "--n", "100", "--k", "3")
	if code != 2 || !strings.Contains(errs, "--device all-gpus: no CUDA device") {
		t.Errorf("bench kmedoids --device all-gpus without a GPU: exit %d, %q", code, errs)
	}
}
