package hub

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gpulab/engine/llm/hub/hubtest"
	"gpulab/engine/llm/lfm2"
	"gpulab/engine/netx"
	"gpulab/engine/netx/netxtest"
)

// moeFixture is the tiny LFM2-MoE checkpoint the engine's tests use, with
// the tokenizer of its family.
func moeFixture(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for name, p := range map[string]string{
		"config.json":       "../../../datasets/testdata/lfm2/moe/config.json",
		"model.safetensors": "../../../datasets/testdata/lfm2/moe/model.safetensors",
		"tokenizer.json":    "../../../datasets/testdata/lfm2/tokenizer/tokenizer.json",
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	files["README.md"] = []byte("# tiny\n")
	files["onnx/model.onnx"] = []byte("not a model file the engine reads")
	return files
}

func serve(t *testing.T, h *hubtest.Hub) Options {
	h.Repo = "LiquidAI/tiny"
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return Options{Endpoint: srv.URL, Client: srv.Client()}
}

// TestPull downloads a checkpoint that the engine then loads, and does
// nothing the second time.
func TestPull(t *testing.T) {
	h := &hubtest.Hub{Files: moeFixture(t), LFS: map[string]bool{"model.safetensors": true}}
	o := serve(t, h)
	dir := t.TempDir()
	r, err := Pull(context.Background(), "LiquidAI/tiny", dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Commit != hubtest.Commit {
		t.Errorf("commit %q", r.Commit)
	}
	for name, want := range h.Files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		switch {
		case ModelFile(name) && (err != nil || !bytes.Equal(got, want)):
			t.Errorf("%s: %v, %d bytes of %d", name, err, len(got), len(want))
		case !ModelFile(name) && err == nil:
			t.Errorf("%s was downloaded, but the engine does not read it", name)
		}
	}
	c, err := lfm2.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := lfm2.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if _, err := lfm2.LoadWeights(c, ck); err != nil {
		t.Errorf("the engine cannot load what was pulled: %v", err)
	}
	before := h.Resolves()
	if _, err := Pull(context.Background(), "LiquidAI/tiny", dir, o); err != nil || h.Resolves() != before {
		t.Errorf("a second pull downloaded %d files again: %v", h.Resolves()-before, err)
	}
}

// TestResume: without retries, a transfer cut in the middle fails, names
// the file and keeps the part; the next pull resumes it with a range
// request. With them (the default), the same pull resumes it.
func TestResume(t *testing.T) {
	files := moeFixture(t)
	half := len(files["model.safetensors"]) / 2
	h := &hubtest.Hub{Files: files, LFS: map[string]bool{"model.safetensors": true}, CutOnce: map[string]int{"model.safetensors": half}}
	o := serve(t, h)
	o.Net.Retries = -1
	dir := t.TempDir()
	_, err := Pull(context.Background(), "LiquidAI/tiny", dir, o)
	if err == nil || !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), "run the pull again to resume") {
		t.Fatalf("a cut transfer: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		t.Error("a partial file took the final name")
	}
	if _, err := Pull(context.Background(), "LiquidAI/tiny", dir, o); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "model.safetensors")); !bytes.Equal(got, files["model.safetensors"]) {
		t.Error("the resumed file differs")
	}
	if want := fmt.Sprintf("bytes=%d-", half); !strings.Contains(strings.Join(h.Ranges(), " "), want) {
		t.Errorf("no range request %q: %q", want, h.Ranges())
	}

	h.CutOnce = map[string]int{"model.safetensors": half}
	o.Net = netx.Options{Backoff: time.Millisecond}
	var progress strings.Builder
	o.Progress = &progress
	dir = t.TempDir()
	if _, err := Pull(context.Background(), "LiquidAI/tiny", dir, o); err != nil {
		t.Fatalf("with retries: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "model.safetensors")); !bytes.Equal(got, files["model.safetensors"]) {
		t.Error("the file resumed by a retry differs")
	}
	if want := fmt.Sprintf("hub: model.safetensors: the transfer broke at %d of", half); !strings.Contains(progress.String(), want) ||
		!strings.Contains(progress.String(), "trying again in 1ms") {
		t.Errorf("progress %q lacks %q and the retry", progress.String(), want)
	}
}

// TestFaults: what a pull says of each fault, and what it leaves.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		hub  func(h *hubtest.Hub)
		want string
	}{
		{"a missing file", func(h *hubtest.Hub) { h.Missing = map[string]bool{"tokenizer.json": true} }, "tokenizer.json: 404 Not Found (no such repository, revision or file)"},
		{"a wrong checksum", func(h *hubtest.Hub) {
			altered := bytes.Clone(h.Files["model.safetensors"])
			altered[len(altered)/2] ^= 1
			h.Listed = map[string][]byte{"model.safetensors": altered}
		}, "model.safetensors: sha256"},
		{"a wrong blob", func(h *hubtest.Hub) {
			h.Listed = map[string][]byte{"config.json": []byte(strings.Repeat("x", len(h.Files["config.json"])))}
		}, "config.json: git blob"},
		{"more bytes than listed", func(h *hubtest.Hub) { h.Listed = map[string][]byte{"README.md": []byte("#")} }, "README.md: the server sent more than the 1 bytes"},
		{"a gated repository", func(h *hubtest.Hub) { h.Token = "secret" }, "401 Unauthorized (a gated or private repository: set HF_TOKEN)"},
		{"a file outside the repository", func(h *hubtest.Hub) {
			h.Listing = `{"id": "LiquidAI/tiny", "sha": "` + hubtest.Commit + `", "siblings": [{"rfilename": "../../etc/cron.d/x", "size": 1}]}`
		}, `a file "../../etc/cron.d/x" outside the repository`},
		{"data after the listing", func(h *hubtest.Hub) {
			h.Listing = `{"id": "LiquidAI/tiny", "sha": "` + hubtest.Commit + `", "siblings": []} {}`
		}, "data after its JSON"},
		{"no commit", func(h *hubtest.Hub) { h.Listing = `{"id": "LiquidAI/tiny", "siblings": []}` }, "names no commit"},
		{"no model files", func(h *hubtest.Hub) { h.Files = map[string][]byte{"notes.txt": []byte("x")} }, "has no model files"},
		{"more than the disk holds", func(h *hubtest.Hub) {
			h.Listing = `{"id": "LiquidAI/tiny", "sha": "` + hubtest.Commit + `", "siblings": [{"rfilename": "model.safetensors", "size": 135, "lfs": {"sha256": "` + strings.Repeat("0", 64) + `", "size": 1152921504606846976}}]}`
		}, "the download needs 1152921504606846976 more bytes"},
		{"a shard the index names but the repository lacks", func(h *hubtest.Hub) {
			h.Files["model.safetensors.index.json"] = []byte(`{"weight_map": {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}}`)
		}, "puts model.embed_tokens.weight in model-00002-of-00002.safetensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hubtest.Hub{Files: moeFixture(t), LFS: map[string]bool{"model.safetensors": true}}
			tc.hub(h)
			o := serve(t, h)
			dir := t.TempDir()
			_, err := Pull(context.Background(), "LiquidAI/tiny", dir, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			parts, _ := filepath.Glob(filepath.Join(dir, ".*.part"))
			if strings.Contains(tc.want, "sha256") || strings.Contains(tc.want, "git blob") {
				if len(parts) > 0 {
					t.Errorf("a damaged download was kept: %v", parts)
				}
			}
		})
	}
}

// TestEnvironment: HF_ENDPOINT and HF_TOKEN are honoured; a bad id is
// refused before anything is asked.
func TestEnvironment(t *testing.T) {
	h := &hubtest.Hub{Files: moeFixture(t), LFS: map[string]bool{"model.safetensors": true}, Token: "hf_test"}
	o := serve(t, h)
	t.Setenv("HF_ENDPOINT", o.Endpoint+"/")
	t.Setenv("HF_TOKEN", "hf_test")
	if _, err := Pull(context.Background(), "LiquidAI/tiny", t.TempDir(), Options{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"tiny", "a/b/c", "../x", "LiquidAI/.hidden", "Liquid AI/x", ""} {
		if _, err := List(context.Background(), id, Options{}); err == nil || !strings.Contains(err.Error(), "not a repository id") {
			t.Errorf("%q: %v", id, err)
		}
	}
}

func TestModelFile(t *testing.T) {
	for name, want := range map[string]bool{
		"config.json": true, "model-00001-of-00004.safetensors": true, "model.safetensors.index.json": true,
		"tokenizer.json": true, "tokenizer_config.json": true, "generation_config.json": true, "LICENSE": true,
		"onnx/model.safetensors": false, "pytorch_model.bin": false, "images/x.png": false, "README.md": true,
	} {
		if ModelFile(name) != want {
			t.Errorf("ModelFile(%q) = %v", name, !want)
		}
	}
}

// stalling serves h, but the first stalls requests for file's resolve URL
// send the headers and the first cut bytes of the file (nothing at all,
// not even the headers, if cut < 0) and then wait until the client gives
// up or the test ends.
func stalling(t *testing.T, h *hubtest.Hub, file string, cut, stalls int) Options {
	h.Repo = "LiquidAI/tiny"
	var mu sync.Mutex
	srv := netxtest.Server(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		mu.Lock()
		stall := strings.HasSuffix(r.URL.Path, "/"+file) && stalls > 0
		if stall {
			stalls--
		}
		mu.Unlock()
		if !stall {
			h.ServeHTTP(w, r)
			return
		}
		netxtest.Stall(w, r, h.Files[file], cut, release)
	})
	return Options{Endpoint: srv.URL, Client: srv.Client(), Net: shortWaits}
}

// shortWaits fail a stalled request in a second (the server answers a
// request that does not stall far sooner, however loaded the machine), and retry it
// twice.
var shortWaits = netx.Options{Header: time.Second, Idle: time.Second, Retries: 2, Backoff: 10 * time.Millisecond}

// pullWithin runs Pull and fails the test if it has not returned within d.
func pullWithin(t *testing.T, d time.Duration, dir string, o Options) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := Pull(context.Background(), "LiquidAI/tiny", dir, o)
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("the pull returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
		return err
	case <-time.After(d):
		t.Fatalf("the pull still hangs after %v", d)
		return nil
	}
}

// TestStalls: a hub that never answers a file's request, or stops sending
// in the middle of it, fails the pull within a bounded time, naming the
// file and the timeout, or, with retries, resumes the file where it
// stopped.
func TestStalls(t *testing.T) {
	files := moeFixture(t)
	half := len(files["model.safetensors"]) / 2
	newHub := func() *hubtest.Hub {
		return &hubtest.Hub{Files: files, LFS: map[string]bool{"model.safetensors": true}}
	}
	t.Run("no headers", func(t *testing.T) {
		o := stalling(t, newHub(), "model.safetensors", -1, 1000)
		err := pullWithin(t, 20*time.Second, t.TempDir(), o)
		if err == nil || !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), "no response headers within 1s") ||
			!strings.Contains(err.Error(), "3 attempts") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("stops mid-file", func(t *testing.T) {
		o := stalling(t, newHub(), "model.safetensors", half, 1)
		o.Net.Retries = -1
		dir := t.TempDir()
		err := pullWithin(t, 20*time.Second, dir, o)
		want := fmt.Sprintf("no data for 1s after %d of %d bytes", half, len(files["model.safetensors"]))
		if err == nil || !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "run the pull again to resume") {
			t.Errorf("error %v, want one naming model.safetensors and %q", err, want)
		}
		if info, err := os.Stat(filepath.Join(dir, ".model.safetensors.part")); err != nil || info.Size() != int64(half) {
			t.Errorf("the part: %v, %v; want %d bytes kept to resume", info, err, half)
		}
	})
	t.Run("resumed", func(t *testing.T) {
		h := newHub()
		o := stalling(t, h, "model.safetensors", half, 1)
		dir := t.TempDir()
		if err := pullWithin(t, 20*time.Second, dir, o); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "model.safetensors")); !bytes.Equal(got, files["model.safetensors"]) {
			t.Error("the resumed file differs")
		}
		if want := fmt.Sprintf("bytes=%d-", half); !slices.Contains(h.Ranges(), want) {
			t.Errorf("no range request %q: %q", want, h.Ranges())
		}
	})
}
