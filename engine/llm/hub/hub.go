// Package hub downloads a model from the Hugging Face hub, or from any
// server that answers its API ($HF_ENDPOINT): the files of a repository at
// a revision, resolved to one commit so that every file comes from the
// same one.
//
// Every file is written to a partial file in the target directory, checked
// and renamed into place: a file the directory holds is whole and
// verified. A partial file left by an interrupted download is resumed with
// an HTTP range request. Sizes are checked against what the hub lists,
// sha256 against the LFS pointer (the weights), and git's blob hash against
// the blob id (the small files), so a truncated or altered transfer fails
// and names the file. Nothing larger than the hub lists is read, and the
// download does not start unless the disk has room for it.
//
// No wait is unbounded (engine/netx): a hub that accepts the connection and
// never answers, or stops in the middle of a file, fails the request after
// a connect, header or idle-read timeout, and the transfer is tried again,
// a few times with growing waits, each time resuming the partial file.
package hub

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gpulab/engine/netx"
	"gpulab/engine/readlimit"
)

// DefaultEndpoint is the hub's address when $HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Options configure a download; zero values are the defaults.
type Options struct {
	Endpoint string            // "" = $HF_ENDPOINT, else DefaultEndpoint
	Token    string            // "" = $HF_TOKEN; sent as a bearer token when set
	Revision string            // a branch, tag or commit; "" = main
	Include  func(string) bool // which files to fetch; nil = ModelFile
	Client   *http.Client      // nil = one with Net's connect limit (netx.Options.Client)
	Net      netx.Options      // the limit on each wait and the retries; zero fields = netx's defaults
	Progress io.Writer         // a line per file and per retry, or nil
}

func (o Options) endpoint() string {
	return strings.TrimRight(cmp.Or(o.Endpoint, os.Getenv("HF_ENDPOINT"), DefaultEndpoint), "/")
}

func (o Options) token() string { return cmp.Or(o.Token, os.Getenv("HF_TOKEN")) }

// withClient is o with a Client, one made for o.Net where o has none, so
// that the requests of a pull share its connections.
func (o Options) withClient() Options {
	if o.Client == nil {
		o.Client = o.Net.Client()
	}
	return o
}

// File is a file of a repository, as the hub lists it.
type File struct {
	Name   string // its path in the repository
	Size   int64
	BlobID string // git's blob hash (sha1 of "blob SIZE\x00" and the content)
	SHA256 string // of the content, for a file stored with LFS
}

// Repo is a repository at one commit.
type Repo struct {
	ID     string
	Commit string
	Files  []File
}

// ModelFile says whether a file is one a model directory needs: the
// configs, the tokenizer, the weights (safetensors and their index), and
// the licence and card.
func ModelFile(name string) bool {
	base := path.Base(name)
	switch {
	case strings.HasSuffix(base, ".safetensors"), base == "model.safetensors.index.json",
		base == "config.json", base == "generation_config.json",
		strings.HasPrefix(base, "tokenizer") && strings.HasSuffix(base, ".json"),
		base == "special_tokens_map.json", base == "chat_template.jinja",
		base == "README.md", strings.HasPrefix(base, "LICENSE"):
		return path.Dir(name) == "."
	}
	return false
}

// maxListing bounds the hub's answer to a listing.
const maxListing = 16 << 20

// List resolves repo at the options' revision: its commit and every file.
// A file name that would leave the target directory is an error.
func List(ctx context.Context, repo string, o Options) (*Repo, error) {
	if !validRepo(repo) {
		return nil, fmt.Errorf("hub: %q is not a repository id (owner/name)", repo)
	}
	o = o.withClient()
	rev := cmp.Or(o.Revision, "main")
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", o.endpoint(), repo, url.PathEscape(rev))
	var body []byte
	err := netx.Retry(ctx, o.Net, func() error {
		resp, err := o.get(ctx, u, nil)
		if err != nil {
			return fmt.Errorf("hub: listing %s: %w", repo, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return statusError(resp, repo+" at "+rev)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, maxListing+1)); err != nil {
			return fmt.Errorf("hub: listing %s: %w", repo, err)
		}
		return nil
	}, o.retrying)
	if err != nil {
		return nil, err
	}
	if len(body) > maxListing {
		return nil, fmt.Errorf("hub: the listing of %s is over %d bytes", repo, maxListing)
	}
	var info struct {
		ID       string `json:"id"`
		SHA      string `json:"sha"`
		Siblings []struct {
			Name   string `json:"rfilename"`
			Size   int64  `json:"size"`
			BlobID string `json:"blobId"`
			LFS    *struct {
				SHA256 string `json:"sha256"`
				Size   int64  `json:"size"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&info); err != nil {
		return nil, fmt.Errorf("hub: the listing of %s is not the hub's JSON: %w", repo, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("hub: the listing of %s has data after its JSON", repo)
	}
	if !isHex(info.SHA, 40) {
		return nil, fmt.Errorf("hub: the listing of %s names no commit (sha %q)", repo, info.SHA)
	}
	r := &Repo{ID: cmp.Or(info.ID, repo), Commit: info.SHA}
	for _, s := range info.Siblings {
		if !filepath.IsLocal(s.Name) || strings.Contains(s.Name, `\`) {
			return nil, fmt.Errorf("hub: %s lists a file %q outside the repository", repo, s.Name)
		}
		f := File{Name: s.Name, Size: s.Size, BlobID: s.BlobID}
		if s.LFS != nil {
			f.SHA256, f.Size = strings.ToLower(s.LFS.SHA256), s.LFS.Size
		}
		if f.Size < 0 || f.SHA256 != "" && !isHex(f.SHA256, 64) || f.BlobID != "" && !isHex(f.BlobID, 40) {
			return nil, fmt.Errorf("hub: %s lists %s with a bad size or hash", repo, s.Name)
		}
		r.Files = append(r.Files, f)
	}
	return r, nil
}

// Pull downloads the files of repo that o.Include selects into dir and
// returns the repository it resolved. Files already there whole are kept;
// partial ones are resumed, and so is a transfer that breaks off or stalls
// (up to o.Net's retries). With sharded weights, every shard the index
// names must be among the files.
func Pull(ctx context.Context, repo, dir string, o Options) (*Repo, error) {
	o = o.withClient()
	r, err := List(ctx, repo, o)
	if err != nil {
		return nil, err
	}
	include := o.Include
	if include == nil {
		include = ModelFile
	}
	var files []File
	var need int64
	for _, f := range r.Files {
		if include(f.Name) {
			files = append(files, f)
			need += f.Size
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("hub: %s at %s has no model files (config.json, *.safetensors, tokenizer.json)", repo, r.Commit[:12])
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := checkRoom(dir, need, files); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := o.fetch(ctx, r, f, dir); err != nil {
			return nil, err
		}
	}
	return r, checkShards(dir, files)
}

// fetch downloads one file into dir, resuming its partial file, verifies
// it and renames it into place; a file already in place with the listed
// size and hash is kept.
func (o Options) fetch(ctx context.Context, r *Repo, f File, dir string) error {
	final := filepath.Join(dir, filepath.FromSlash(f.Name))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	if verify(final, f) == nil {
		o.progress("%s: already here (%d bytes)", f.Name, f.Size)
		return nil
	}
	part := filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".part")
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if have > f.Size {
		if err := out.Truncate(0); err != nil {
			return err
		}
		have, _ = out.Seek(0, io.SeekStart)
	}
	if have < f.Size {
		err := netx.Retry(ctx, o.Net, func() error {
			var err error
			have, err = o.download(ctx, r, f, out, have)
			return err
		}, o.retrying)
		if err != nil {
			return err
		}
	}
	if have != f.Size {
		return fmt.Errorf("hub: %s: the transfer ended at %d of %d bytes (run the pull again to resume)", f.Name, have, f.Size)
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := verify(part, f); err != nil {
		os.Remove(part) // a whole file with a wrong hash will not get better by resuming
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	o.progress("%s: %d bytes, verified", f.Name, f.Size)
	return os.Rename(part, final)
}

// download appends the file's bytes from have onward to out, with a range
// request when have > 0, and returns how many bytes out holds.
func (o Options) download(ctx context.Context, r *Repo, f File, out *os.File, have int64) (int64, error) {
	var segments []string
	for _, s := range strings.Split(f.Name, "/") {
		segments = append(segments, url.PathEscape(s))
	}
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", o.endpoint(), r.ID, r.Commit, strings.Join(segments, "/"))
	header := http.Header{}
	if have > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := o.get(ctx, u, header)
	if err != nil {
		return have, fmt.Errorf("hub: %s: %w", f.Name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0 && contentRangeStart(resp) == have:
	case resp.StatusCode == http.StatusOK: // the whole file again
		if err := out.Truncate(0); err != nil {
			return 0, err
		}
		if have, err = out.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
	default:
		return have, statusError(resp, f.Name)
	}
	// Never more than the listed size: one byte over says the server lies.
	n, err := io.Copy(out, io.LimitReader(resp.Body, f.Size-have+1))
	have += n
	if err != nil {
		return have, fmt.Errorf("hub: %s: the transfer broke at %d of %d bytes (run the pull again to resume): %w", f.Name, have, f.Size, err)
	}
	if have > f.Size {
		return have, fmt.Errorf("hub: %s: the server sent more than the %d bytes the hub lists", f.Name, f.Size)
	}
	return have, nil
}

// contentRangeStart is the first byte of a 206 response ("bytes S-E/T"),
// -1 if the header is missing or malformed.
func contentRangeStart(resp *http.Response) int64 {
	cr, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes ")
	start, _, ok2 := strings.Cut(cr, "-")
	n, err := strconv.ParseInt(start, 10, 64)
	if !ok || !ok2 || err != nil {
		return -1
	}
	return n
}

// verify checks a file's size and the hashes the hub lists for it.
func verify(p string, f File) error {
	file, err := os.Open(p)
	if err != nil {
		return err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return err
	}
	if info.Size() != f.Size {
		return fmt.Errorf("hub: %s is %d bytes, the hub lists %d", f.Name, info.Size(), f.Size)
	}
	var hashes []hash.Hash
	sum256, blob := sha256.New(), sha1.New()
	if f.SHA256 != "" {
		hashes = append(hashes, sum256)
	}
	if f.BlobID != "" && f.SHA256 == "" { // an LFS file's blob id is its pointer's
		fmt.Fprintf(blob, "blob %d\x00", f.Size)
		hashes = append(hashes, blob)
	}
	if len(hashes) == 0 {
		return nil
	}
	writers := make([]io.Writer, len(hashes))
	for i, h := range hashes {
		writers[i] = h
	}
	if _, err := io.Copy(io.MultiWriter(writers...), file); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum256.Sum(nil)); f.SHA256 != "" && got != f.SHA256 {
		return fmt.Errorf("hub: %s: sha256 %s, the hub lists %s (the download is damaged; it was removed)", f.Name, got, f.SHA256)
	}
	if got := hex.EncodeToString(blob.Sum(nil)); f.BlobID != "" && f.SHA256 == "" && got != f.BlobID {
		return fmt.Errorf("hub: %s: git blob %s, the hub lists %s (the download is damaged; it was removed)", f.Name, got, f.BlobID)
	}
	return nil
}

// checkRoom refuses a download that the disk under dir cannot hold,
// counting what partial and finished files already hold.
func checkRoom(dir string, need int64, files []File) error {
	for _, f := range files {
		final := filepath.Join(dir, filepath.FromSlash(f.Name))
		part := filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".part")
		for _, p := range []string{final, part} {
			if info, err := os.Stat(p); err == nil {
				need -= min(info.Size(), f.Size)
			}
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // no figure: the writes will say if the disk fills
	}
	if free := int64(st.Bavail) * st.Bsize; need > free {
		return fmt.Errorf("hub: the download needs %d more bytes in %s, which has %d free", need, dir, free)
	}
	return nil
}

// maxIndexBytes bounds a safetensors index: one of thousands of tensors is
// a few hundred kilobytes.
const maxIndexBytes = 16 << 20

// checkShards makes sure that every shard a safetensors index names was
// among the files downloaded.
func checkShards(dir string, files []File) error {
	const index = "model.safetensors.index.json"
	data, err := readlimit.ReadFile(filepath.Join(dir, index), index, maxIndexBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return fmt.Errorf("hub: %s: %w", index, err)
	}
	for tensor, shard := range idx.WeightMap {
		if !slices.ContainsFunc(files, func(f File) bool { return f.Name == shard }) {
			return fmt.Errorf("hub: %s puts %s in %s, which the repository does not have", index, tensor, shard)
		}
	}
	return nil
}

// get sends a GET with the token, if any, under o.Net's limits (netx.Get)
// through o.Client, which withClient has set.
func (o Options) get(ctx context.Context, u string, header http.Header) (*http.Response, error) {
	h := http.Header{}
	for k, v := range header {
		h[k] = v
	}
	if t := o.token(); t != "" {
		h.Set("Authorization", "Bearer "+t)
	}
	return netx.Get(ctx, o.Client, u, h, o.Net)
}

// retrying says, on o.Progress, that a request failed with err (which
// names the file or the listing) and is tried again after wait.
func (o Options) retrying(err error, wait time.Duration) {
	o.progress("%v; trying again in %v", err, wait)
}

// statusError says what an unexpected answer means.
func statusError(resp *http.Response, what string) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	hint := ""
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (a gated or private repository: set HF_TOKEN)"
	case http.StatusNotFound:
		hint = " (no such repository, revision or file)"
	}
	return fmt.Errorf("hub: %s: %s%s: %s", what, resp.Status, hint, strings.TrimSpace(string(msg)))
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// validRepo says whether id is owner/name of letters, digits, '-', '_' and
// '.', neither part starting with a dot.
func validRepo(id string) bool {
	owner, name, ok := strings.Cut(id, "/")
	part := func(s string) bool {
		if s == "" || s[0] == '.' || len(s) > 96 {
			return false
		}
		for _, c := range s {
			if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
		return true
	}
	return ok && part(owner) && part(name)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
