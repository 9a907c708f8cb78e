// Package hubtest is a Hugging Face hub for tests: the listing API and the
// resolve URLs of one repository, with range requests, and faults to
// order. Serve it with httptest.NewServer and point hub.Options.Endpoint
// (or $HF_ENDPOINT) at it.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Commit is the commit every listing names.
const Commit = "0123456789abcdef0123456789abcdef01234567"

// Hub is one repository and the faults to serve it with.
type Hub struct {
	Repo    string            // owner/name
	Files   map[string][]byte // what the repository holds
	LFS     map[string]bool   // files stored with LFS (listed with their sha256)
	Listed  map[string][]byte // what the listing describes, where it differs from Files
	Missing map[string]bool   // listed, but 404 at resolve
	CutOnce map[string]int    // the first transfer of the file stops after this many bytes
	Token   string            // required as a bearer token when set
	Listing string            // served instead of the listing when set

	mu       sync.Mutex
	ranges   []string
	resolves int
}

// Ranges are the Range headers of the resolve requests so far.
func (h *Hub) Ranges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ranges...)
}

// Resolves counts the resolve requests so far.
func (h *Hub) Resolves() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.resolves
}

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Token != "" && r.Header.Get("Authorization") != "Bearer "+h.Token {
		http.Error(w, "Invalid credentials", http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/models/"+h.Repo+"/revision/") {
		h.list(w)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/"+h.Repo+"/resolve/"+Commit+"/")
	data, exists := h.Files[name]
	if !ok || !exists || h.Missing[name] {
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	h.mu.Lock()
	h.resolves++
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	cut, cutting := h.CutOnce[name]
	delete(h.CutOnce, name)
	h.mu.Unlock()
	if cutting {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Write(data[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-transfer
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// list answers the listing API as the hub does with ?blobs=true.
func (h *Hub) list(w http.ResponseWriter) {
	if h.Listing != "" {
		w.Write([]byte(h.Listing))
		return
	}
	type lfs struct {
		SHA256 string `json:"sha256"`
		Size   int    `json:"size"`
	}
	type sibling struct {
		Name   string `json:"rfilename"`
		Size   int    `json:"size"`
		BlobID string `json:"blobId"`
		LFS    *lfs   `json:"lfs,omitempty"`
	}
	var sib []sibling
	for name, data := range h.Files {
		if d, ok := h.Listed[name]; ok {
			data = d
		}
		s := sibling{Name: name, Size: len(data)}
		if h.LFS[name] {
			sum := sha256.Sum256(data)
			s.LFS, s.BlobID = &lfs{SHA256: hex.EncodeToString(sum[:]), Size: len(data)}, strings.Repeat("a", 40)
			s.Size = 135 // the pointer's size, as the hub lists it
		} else {
			b := sha1.Sum(append([]byte(fmt.Sprintf("blob %d\x00", len(data))), data...))
			s.BlobID = hex.EncodeToString(b[:])
		}
		sib = append(sib, s)
	}
	json.NewEncoder(w).Encode(map[string]any{"id": h.Repo, "sha": Commit, "siblings": sib})
}
