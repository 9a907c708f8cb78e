// Package netxtest serves HTTP that stalls, for tests of what package netx
// and its callers do with a server that stops answering.
package netxtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Server starts a test server whose handler is handle, closed when the test
// ends. handle gets a channel that closes first, so that a handler still
// stalled returns and the server's Close does not wait for it.
func Server(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, release <-chan struct{})) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, release) }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before Close: cleanups run last-added first
	return srv
}

// Stall answers with the first cut bytes of body under a Content-Length of
// the whole (nothing at all, not even the headers, when cut < 0), then
// waits until the client leaves or release closes.
func Stall(w http.ResponseWriter, r *http.Request, body []byte, cut int, release <-chan struct{}) {
	if cut >= 0 {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
	}
	Wait(r, release)
}

// Wait blocks until the client leaves or release closes.
func Wait(r *http.Request, release <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-release:
	}
}
