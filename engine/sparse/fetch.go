package sparse

// Downloading matrices from the SuiteSparse Matrix Collection.

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gpulab/engine/atomicfile"
	"gpulab/engine/netx"
)

// DefaultSuiteSparseURL is where Fetch downloads from: the collection's
// Matrix Market tarballs are at <base>/<Group>/<Name>.tar.gz.
const DefaultSuiteSparseURL = "https://suitesparse-collection-website.herokuapp.com/MM"

// SuiteSparseURLEnv names the environment variable that, when set,
// replaces DefaultSuiteSparseURL (for a mirror, or a local test server:
// GPULAB_SUITESPARSE_URL=http://127.0.0.1:8080/MM). FetchOptions.BaseURL
// takes precedence over it.
const SuiteSparseURLEnv = "GPULAB_SUITESPARSE_URL"

// FetchOptions configures Fetch. The zero value downloads from
// DefaultSuiteSparseURL (or $GPULAB_SUITESPARSE_URL) into
// os.UserCacheDir()/gpulab/suitesparse.
type FetchOptions struct {
	BaseURL  string        // default: $GPULAB_SUITESPARSE_URL, else DefaultSuiteSparseURL
	Client   *http.Client  // default: one with Net's connect limit (netx.Options.Client)
	Net      netx.Options  // the limit on each wait (connect, headers, each read) and the retries; zero fields = netx's defaults
	CacheDir string        // default: os.UserCacheDir()/gpulab/suitesparse
	Timeout  time.Duration // the whole download, retries included; default 10 minutes
	MaxBytes int64         // limit on the tarball and on the extracted .mtx; default 4 GiB
}

var suiteSparseName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]*/[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)

// Fetch returns the path of the Matrix Market file of the SuiteSparse
// matrix name ("Group/Name", e.g. "HB/bcsstk01"), downloading
// <base>/<Group>/<Name>.tar.gz and extracting its <Name>/<Name>.mtx member
// into <cache>/<Group>/<Name>.mtx when the cache does not have it yet. The
// cached file is written through a temporary file and renamed, so an
// interrupted download leaves nothing behind. A server that stops
// answering fails the download after opt.Net's timeouts, and a transfer
// that breaks off or stalls is downloaded again (netx.Retry).
func Fetch(name string, opt FetchOptions) (string, error) {
	if !suiteSparseName.MatchString(name) || strings.Contains(name, "..") {
		return "", fmt.Errorf("sparse: bad SuiteSparse matrix name %q: want Group/Name, e.g. HB/bcsstk01", name)
	}
	group, mat, _ := strings.Cut(name, "/")
	cache := opt.CacheDir
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("sparse: no cache directory: %w", err)
		}
		cache = filepath.Join(dir, "gpulab", "suitesparse")
	}
	dst := filepath.Join(cache, group, mat+".mtx")
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		return dst, nil
	}

	base := opt.BaseURL
	if base == "" {
		base = os.Getenv(SuiteSparseURLEnv)
	}
	if base == "" {
		base = DefaultSuiteSparseURL
	}
	url := strings.TrimRight(base, "/") + "/" + group + "/" + mat + ".tar.gz"
	client := opt.Client
	if client == nil {
		client = opt.Net.Client()
	}
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	maxBytes := opt.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 4 << 30
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := netx.Retry(ctx, opt.Net, func() error {
		return download(ctx, client, url, dst, mat, maxBytes, opt.Net)
	}, nil)
	if err != nil {
		return "", fmt.Errorf("sparse: fetch %s from %s: %w", name, url, err)
	}
	return dst, nil
}

// download is one attempt of Fetch: GET url and extract the member
// <mat>/<mat>.mtx of the tarball to dst.
func download(ctx context.Context, client *http.Client, url, dst, mat string, maxBytes int64, limits netx.Options) error {
	resp, err := netx.Get(ctx, client, url, nil, limits)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	if resp.ContentLength > maxBytes {
		return fmt.Errorf("%d bytes is over the %d-byte limit", resp.ContentLength, maxBytes)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	body := &limitedReader{r: resp.Body, n: maxBytes, what: "download"}
	return atomicfile.Write(dst, func(w *bufio.Writer) error {
		return extractMember(bufio.NewReaderSize(body, 1<<16), mat+"/"+mat+".mtx", w, maxBytes)
	})
}

// extractMember copies the member called want of the tar.gz stream r to w.
func extractMember(r io.Reader, want string, w io.Writer, maxBytes int64) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a gzip tarball: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("tarball has no member %s", want)
		}
		if err != nil {
			return fmt.Errorf("corrupt tarball: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg || path.Clean(strings.TrimPrefix(hdr.Name, "./")) != want {
			continue
		}
		if hdr.Size > maxBytes {
			return fmt.Errorf("member %s is %d bytes, over the %d-byte limit", want, hdr.Size, maxBytes)
		}
		br := bufio.NewReader(tr)
		head, _ := br.Peek(len("%%MatrixMarket"))
		if !strings.EqualFold(string(head), "%%MatrixMarket") {
			return fmt.Errorf("member %s is not a Matrix Market file", want)
		}
		if _, err := io.Copy(w, br); err != nil {
			return fmt.Errorf("corrupt tarball: %w", err)
		}
		return nil
	}
}

// limitedReader fails, rather than stopping quietly, past n bytes.
type limitedReader struct {
	r    io.Reader
	n    int64
	what string
}

var errTooLarge = errors.New("over the size limit")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, fmt.Errorf("%s %w", l.what, errTooLarge)
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	if l.n < 0 {
		return k, fmt.Errorf("%s %w", l.what, errTooLarge)
	}
	return k, err
}
