package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/sparse"
)

func TestSparseInfoJSON(t *testing.T) {
	// sym5x5: 1D Laplacian, 9 stored, 13 expanded; rows have 2,3,3,3,2 entries.
	file := filepath.Join("..", "datasets", "mtx", "sym5x5.mtx")
	code, out, errs := lab("sparse", "info", file, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	mean := 13.0 / 5
	sd := math.Sqrt((2*(2-mean)*(2-mean) + 3*(3-mean)*(3-mean)) / 5)
	want := map[string]any{
		"rows": 5.0, "cols": 5.0, "nnz": 13.0, "stored": 9.0,
		"format": "coordinate", "field": "real", "symmetry": "symmetric",
		"row_min": 2.0, "row_max": 3.0, "row_mean": mean, "row_stddev": sd,
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no %q in %s", k, out)
			continue
		}
		if f, isF := w.(float64); isF {
			if gf, _ := g.(float64); math.Abs(gf-f) > 1e-9 {
				t.Errorf("%s = %v, want %v", k, g, w)
			}
		} else if g != w {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

func TestSparseInfoText(t *testing.T) {
	code, out, errs := lab("sparse", "info", "--json=false", filepath.Join("..", "datasets", "mtx", "skew4x4.mtx"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"coordinate integer skew-symmetric", "4×4", "stored     4 entries", "nnz        8 (after expanding the skew-symmetric entries)", "min 2, max 2, mean 2.00, stddev 0.00"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestSparseErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.mtx")
	if err := os.WriteFile(bad, []byte("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 7 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sparse"}, 2, "no subcommand"},
		{[]string{"sparse", "frob"}, 2, "unknown subcommand"},
		{[]string{"sparse", "info"}, 2, "no file given"},
		{[]string{"sparse", "info", "a.mtx", "b.mtx"}, 2, "unexpected arguments"},
		{[]string{"sparse", "info", bad}, 1, bad + ":line 3: column index 7 out of range 1..2"},
		{[]string{"sparse", "info", "no/such/file.mtx"}, 1, "no such file"},
		{[]string{"sparse", "fetch", "justaname"}, 2, "bad SuiteSparse matrix name"},
		{[]string{"sparse", "phases"}, 2, "no matrix given"},
		{[]string{"sparse", "phases", "poisson:k=4", "--device", "cpu"}, 2, `invalid value "cpu" for flag -device: want cuda:N`},
		{[]string{"sparse", "phases", "poisson:k=4", "--device", "cuda:99"}, 2, "cuda:99"},
	}
	for _, tc := range tests {
		code, _, errs := lab(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func TestSparseFetch(t *testing.T) {
	const mtx = "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 1\n2 2\n"
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "tiny/tiny.mtx", Mode: 0o644, Size: int64(len(mtx)), Typeflag: tar.TypeReg})
	tw.Write([]byte(mtx))
	tw.Close()
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/MM/Test/tiny.tar.gz" {
			http.NotFound(w, r)
			return
		}
		w.Write(b.Bytes())
	}))
	defer srv.Close()
	t.Setenv(sparse.SuiteSparseURLEnv, srv.URL+"/MM")
	cache := t.TempDir()

	code, out, errs := lab("sparse", "fetch", "Test/tiny", "--cache", cache)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	path := strings.TrimSpace(out)
	if want := filepath.Join(cache, "Test", "tiny.mtx"); path != want {
		t.Errorf("printed %q, want %q", path, want)
	}
	code, out, errs = lab("sparse", "info", path, "--json")
	if code != 0 || !strings.Contains(out, `"nnz": 2`) {
		t.Errorf("info on the fetched file: exit %d %s %s", code, out, errs)
	}
	code, _, errs = lab("sparse", "fetch", "--cache", cache, "Test/absent")
	if code != 1 || !strings.Contains(errs, "404") {
		t.Errorf("absent matrix: exit %d %s", code, errs)
	}
}

// TestBenchMatrix runs the CPU spgemm suite through --matrix with a
// generator spec (commas included), a .mtx file and the gen: prefix.
func TestBenchMatrix(t *testing.T) {
	file := filepath.Join("..", "datasets", "mtx", "general4x4.mtx")
	code, out, errs := lab("bench", "spgemm", "--device", "cpu", "--min-time", "1ms", "--reps", "1",
		"--matrix", "uniform:n=300,k=5, "+file+", gen:banded:n=50,w=2", "--variants", "gustavson_parallel")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errs)
	}
	for _, want := range []string{"uniform:n=300,k=5", "general4x4.mtx", "gen:banded:n=50,w=2", "gustavson_parallel"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := lab("bench", "spgemm", "--device", "cpu", "--matrix", "Nope/NotThere/x"); code == 0 || !strings.Contains(errs, "Nope/NotThere/x") {
		t.Errorf("a bad matrix name: exit %d, %s", code, errs)
	}
}

// TestSparseBoundedByWhatExists: a three-line file declaring two billion
// rows and columns with no entries is described without a slot per row, and
// the suites refuse to build its CSR form (8 GB of row pointers) on a host
// with less memory, saying what they need; a value that is not finite is
// refused where it stands.
func TestSparseBoundedByWhatExists(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.mtx")
	if err := os.WriteFile(huge, []byte("%%MatrixMarket matrix coordinate real general\n% two billion empty rows\n2000000000 2000000000 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs, grew := labAllocating("sparse", "info", huge, "--json")
	if code != 0 {
		t.Fatalf("sparse info: exit %d: %s", code, errs)
	}
	if grew > 64<<20 {
		t.Errorf("sparse info allocated %d bytes for a file of three lines", grew)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	for k, want := range map[string]float64{"rows": 2e9, "rows_empty": 2e9, "nnz": 0, "row_max": 0, "row_mean": 0} {
		if info[k] != want {
			t.Errorf("%s = %v, want %v", k, info[k], want)
		}
	}

	t.Setenv(engine.HostMemoryEnv, "4000000000")
	for _, suite := range []string{"spmv", "spgemm"} {
		code, _, errs = lab("bench", suite, "--device", "cpu", "--matrix", huge)
		if want := "the CSR form of a 2000000000×2000000000 matrix with 0 entries needs 8.0 GB of host memory for 2000000001 row pointers and the entries sorted; 4.0 GB is available"; code != 1 || !strings.Contains(errs, want) {
			t.Errorf("bench %s: exit %d, %s; want exit 1 and %q", suite, code, errs, want)
		}
	}

	// Under `ulimit -v` (4 GB of address space), with no cap of the lab's
	// own, the same refusal comes from the rlimit, not a fatal error.
	cmd := exec.Command("bash", "-c", `ulimit -v 4000000 && exec "$0" "$@"`, os.Args[0], "bench", "spmv", "--device", "cpu", "--matrix", huge)
	cmd.Env = append(os.Environ(), labMainEnv+"=1", engine.HostMemoryEnv+"=")
	stderr, err := cmd.CombinedOutput()
	if want := "needs 8.0 GB of host memory for 2000000001 row pointers"; cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(stderr), want) {
		t.Errorf("bench spmv under ulimit -v 4000000: %v, %s; want exit 1 and %q", err, stderr, want)
	}

	nan := filepath.Join(dir, "nan.mtx")
	if err := os.WriteFile(nan, []byte("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 1 NaN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = lab("sparse", "info", nan)
	if want := nan + `:line 4: entry 2 (2, 1): value "NaN" is not finite`; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("a NaN: exit %d, %s; want exit 1 and %q", code, errs, want)
	}
}

// TestSparseInfoDuplicates: entries at one position are summed, as
// scipy.io.mmread(f).tocsr() sums them, so nnz and density count positions,
// and the duplicates are reported in the text and the JSON (for symmetric
// files, of the expanded entries); a symmetric file that lists both
// triangles is refused, naming the line.
func TestSparseInfoDuplicates(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"dup.mtx":  "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n1 1 2\n2 2 3\n",
		"sym.mtx":  "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 1\n2 1 2\n2 1 3\n",
		"both.mtx": "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 1\n2 1 1\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file string
		text []string
		json map[string]float64
	}{
		{"dup.mtx", []string{"stored     3 entries", "nnz        2 (1 duplicate summed)\n", "density    50%", "min 1, max 1, mean 1.00, stddev 0.00; 0 of 2 rows empty"},
			map[string]float64{"stored": 3, "nnz": 2, "duplicates": 1, "row_max": 1, "rows_empty": 0}},
		{"sym.mtx", []string{"stored     3 entries", "nnz        3 (after expanding the symmetric entries; 2 duplicates summed)\n", "density    75%", "min 1, max 2"},
			map[string]float64{"stored": 3, "nnz": 3, "duplicates": 2, "row_max": 2, "row_min": 1}},
	} {
		path := filepath.Join(dir, tc.file)
		code, out, errs := lab("sparse", "info", path)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.file, code, errs)
		}
		for _, s := range tc.text {
			if !strings.Contains(out, s) {
				t.Errorf("%s: output lacks %q:\n%s", tc.file, s, out)
			}
		}
		code, out, errs = lab("sparse", "info", path, "--json")
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("%s --json: exit %d, %v: %s %s", tc.file, code, err, out, errs)
		}
		for k, want := range tc.json {
			if got[k] != want {
				t.Errorf("%s: %s = %v, want %v", tc.file, k, got[k], want)
			}
		}
	}
	both := filepath.Join(dir, "both.mtx")
	code, _, errs := lab("sparse", "info", both)
	if want := both + ":line 4: entry (2, 1) is below the diagonal, but line 3's (1, 2) is above it: a symmetric file lists one triangle only"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("both triangles: exit %d, %s; want exit 1 and %q", code, errs, want)
	}
}

// TestSparseInfoBoundsComments: a .mtx.gz of 200,000 comment lines is
// described with the first 1000 of them and a count of the rest, in bounded
// memory; one of more than 16 MiB of comment lines is refused at the line
// that passes the bound.
func TestSparseInfoBoundsComments(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(content))
		zw.Close()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const banner = "%%MatrixMarket matrix coordinate real general\n"
	many := write("many.mtx.gz", banner+strings.Repeat("% a comment line of the flood\n", 200_000)+"2 2 1\n1 1 1\n")
	code, out, errs, grew := labAllocating("sparse", "info", many, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if grew > 8<<20 {
		t.Errorf("sparse info allocated %d bytes for 6 MB of comments", grew)
	}
	var info struct {
		Comments []string `json:"comments"`
		Omitted  int      `json:"comments_omitted"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || len(info.Comments) != 1000 || info.Omitted != 199_000 {
		t.Errorf("%d comments kept, %d omitted (%v); want 1000 and 199000", len(info.Comments), info.Omitted, err)
	}
	if code, out, _ := lab("sparse", "info", many); code != 0 || !strings.Contains(out, "% (199000 more comment lines not kept)") {
		t.Errorf("text: exit %d, the omitted comments not said:\n%.300s", code, out[max(0, len(out)-300):])
	}
	flood := write("flood.mtx.gz", banner+strings.Repeat("% x\n", 5_000_000))
	code, _, errs = lab("sparse", "info", flood)
	if want := flood + ":line 4194306: more than 16777216 bytes of comment and blank lines"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("flood: exit %d, %s; want exit 1 and %q", code, errs, want)
	}
}
