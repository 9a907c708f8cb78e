package sparse

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gpulab/engine/netx"
	"gpulab/engine/netx/netxtest"
)

const fetchMTX = "%%MatrixMarket matrix coordinate real symmetric\n% test\n3 3 4\n1 1 2\n2 1 -1\n2 2 2\n3 3 1\n"

// tarball builds a .tar.gz holding the given name → content members.
func tarball(t testing.TB, members ...string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for k := 0; k+1 < len(members); k += 2 {
		body := members[k+1]
		if err := tw.WriteHeader(&tar.Header{Name: members[k], Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// suiteSparseServer serves path → body and counts requests.
func suiteSparseServer(t testing.TB, files map[string][]byte) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestFetch(t *testing.T) {
	good := tarball(t, "bcs/README.txt", "hello", "bcs/bcs.mtx", fetchMTX)
	srv, hits := suiteSparseServer(t, map[string][]byte{
		"/MM/HB/bcs.tar.gz":     good,
		"/MM/HB/corrupt.tar.gz": good[:len(good)/2],
		"/MM/HB/garbage.tar.gz": []byte("this is not gzip"),
		"/MM/HB/missing.tar.gz": tarball(t, "missing/README.txt", "no matrix here"),
		"/MM/HB/notmm.tar.gz":   tarball(t, "notmm/notmm.mtx", "hello"),
		"/MM/HB/big.tar.gz":     tarball(t, "big/big.mtx", fetchMTX+strings.Repeat("% pad\n", 1000)),
	})
	cache := t.TempDir()
	opt := FetchOptions{BaseURL: srv.URL + "/MM", CacheDir: cache}

	path, err := Fetch("HB/bcs", opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "HB", "bcs.mtx"); path != want {
		t.Errorf("path %s, want %s", path, want)
	}
	m, h, err := ReadMatrixMarketFile(path)
	if err != nil || h.Symmetry != "symmetric" || m.NNZ() != 5 {
		t.Fatalf("cached file: %v %+v nnz %d", err, h, m.NNZ())
	}
	// Cache hit: no second request, even with the server gone.
	n := hits.Load()
	if p2, err := Fetch("HB/bcs", FetchOptions{BaseURL: "http://127.0.0.1:1/none", CacheDir: cache}); err != nil || p2 != path {
		t.Fatalf("cache hit: %s %v", p2, err)
	}
	if hits.Load() != n {
		t.Errorf("cache hit made a request")
	}

	tests := []struct{ name, want string }{
		{"bcs", "bad SuiteSparse matrix name"},
		{"HB/bcs/x", "bad SuiteSparse matrix name"},
		{"../etc", "bad SuiteSparse matrix name"},
		{"HB/..", "bad SuiteSparse matrix name"},
		{"HB/", "bad SuiteSparse matrix name"},
		{"HB/nosuch", "404 Not Found"},
		{"HB/corrupt", "corrupt tarball"},
		{"HB/garbage", "not a gzip tarball"},
		{"HB/missing", "tarball has no member missing/missing.mtx"},
		{"HB/notmm", "not a Matrix Market file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Fetch(tc.name, opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Fetch(%q) = %q, %v; want an error containing %q", tc.name, p, err, tc.want)
			}
		})
	}
	t.Run("size limit", func(t *testing.T) {
		o := opt
		o.MaxBytes = 500
		if _, err := Fetch("HB/big", o); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("error %v", err)
		}
	})
	// Failures leave nothing in the cache: only bcs.mtx.
	ents, _ := os.ReadDir(filepath.Join(cache, "HB"))
	if len(ents) != 1 || ents[0].Name() != "bcs.mtx" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("cache holds %v", names)
	}
}

func TestFetchEnvURL(t *testing.T) {
	srv, _ := suiteSparseServer(t, map[string][]byte{"/x/G/m.tar.gz": tarball(t, "m/m.mtx", fetchMTX)})
	t.Setenv(SuiteSparseURLEnv, srv.URL+"/x/")
	path, err := Fetch("G/m", FetchOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != fetchMTX {
		t.Errorf("cached %q", b)
	}
}

// stallingServer serves body at every path, but its first stalls requests
// send the headers and the first cut bytes (nothing at all, not even the
// headers, if cut < 0) and then wait until the client gives up or the
// test ends.
func stallingServer(t *testing.T, body []byte, cut int, stalls int32) string {
	var left atomic.Int32
	left.Store(stalls)
	srv := netxtest.Server(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		if left.Add(-1) < 0 {
			w.Write(body)
			return
		}
		netxtest.Stall(w, r, body, cut, release)
	})
	return srv.URL + "/MM"
}

// TestFetchStalls: a server that never answers, or stops sending in the
// middle of the tarball, fails the fetch within a bounded time, naming the
// matrix and the timeout, and leaves nothing in the cache; one that stalls
// once is retried.
func TestFetchStalls(t *testing.T) {
	body := tarball(t, "bcs/bcs.mtx", fetchMTX+strings.Repeat("% pad\n", 2000))
	for _, tc := range []struct {
		name   string
		cut    int
		stalls int32
		want   string // "" = fetched
	}{
		{"no headers", -1, 1000, "no response headers within 1s"},
		{"stops mid-file", len(body) / 2, 1000, fmt.Sprintf("no data for 1s after %d of %d bytes", len(body)/2, len(body))},
		{"stalls once", len(body) / 2, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			opt := FetchOptions{BaseURL: stallingServer(t, body, tc.cut, tc.stalls), CacheDir: cache,
				Net: netx.Options{Header: time.Second, Idle: time.Second, Retries: 2, Backoff: 10 * time.Millisecond}}
			done := make(chan error, 1)
			go func() {
				_, err := Fetch("HB/bcs", opt)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the fetch still hangs after 20 s")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a server that stalls once: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "HB/bcs") || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "3 attempts")):
				t.Errorf("error %v, want one naming HB/bcs, %q and the attempts", err, tc.want)
			}
			ents, _ := os.ReadDir(filepath.Join(cache, "HB"))
			if n := len(ents); (tc.want == "") != (n == 1) {
				t.Errorf("the cache holds %d files", n)
			}
		})
	}
}
