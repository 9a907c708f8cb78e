package netx

import (
	"context"
	"crypto/tls"
	"errors"
	"gpulab/engine/netx/netxtest"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// short are limits for tests: a stall fails in a fifth of a second.
var short = Options{Connect: 200 * time.Millisecond, Header: 200 * time.Millisecond, Idle: 200 * time.Millisecond, Retries: 2, Backoff: 10 * time.Millisecond}

// within fails the test if f has not returned within d.
func within(t *testing.T, d time.Duration, f func()) time.Duration {
	t.Helper()
	done, start := make(chan struct{}), time.Now()
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(d):
		t.Fatalf("still waiting after %v", d)
		return 0
	}
}

// TestGetTimeouts: a server that never sends the headers, or stops in
// the middle of the body, fails Get or the body's Read with a
// *TimeoutError naming the URL, the limit and the bytes read, after about
// the limit; a slow but steady body, each wait under the limit, is read
// whole however long it takes in all.
func TestGetTimeouts(t *testing.T) {
	body := strings.Repeat("x", 1000)
	srv := netxtest.Server(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		switch r.URL.Path {
		case "/silent":
			netxtest.Stall(w, r, nil, -1, release)
		case "/half":
			netxtest.Stall(w, r, []byte(body), 400, release)
		case "/slow":
			for i := range 10 {
				io.WriteString(w, body[100*i:100*(i+1)])
				w.(http.Flusher).Flush()
				time.Sleep(150 * time.Millisecond)
			}
		}
	})
	for _, tc := range []struct {
		path, want string
	}{
		{"/silent", "GET " + srv.URL + "/silent: no response headers within 200ms"},
		{"/half", "GET " + srv.URL + "/half: no data for 200ms after 400 of 1000 bytes"},
		{"/slow", ""}, // 1.5 s in all, read with an idle limit of 1 s: each wait is far under it
	} {
		t.Run(tc.path, func(t *testing.T) {
			var err error
			var data []byte
			o := short
			if tc.want == "" {
				o.Header, o.Idle = time.Second, time.Second
			}
			// The bounds say that a stall fails (it does not hang), not how
			// fast this machine is.
			took := within(t, time.Minute, func() {
				var resp *http.Response
				if resp, err = Get(context.Background(), srv.Client(), srv.URL+tc.path, nil, o); err != nil {
					return
				}
				defer resp.Body.Close()
				data, err = io.ReadAll(resp.Body)
			})
			var te *TimeoutError
			switch {
			case tc.want == "" && (err != nil || string(data) != body):
				t.Errorf("%d bytes, %v; want the whole body", len(data), err)
			case tc.want != "" && (!errors.As(err, &te) || err.Error() != tc.want || !Retryable(err)):
				t.Errorf("error %v, want the *TimeoutError %q", err, tc.want)
			case tc.want != "" && (took < 200*time.Millisecond || took > 30*time.Second):
				t.Errorf("failed after %v, want after the limit of 200ms, not a hang", took)
			}
		})
	}
}

// TestClientConnect: a server that accepts the connection but never
// answers the TLS handshake fails within Options.Connect.
func TestClientConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, silent
		}
	}()
	t.Cleanup(func() { ln.Close() })
	o := short
	o.Header = 10 * time.Second
	client := o.Client()
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	var gerr error
	took := within(t, time.Minute, func() {
		_, gerr = Get(context.Background(), client, "https://"+ln.Addr().String()+"/x", nil, o)
	})
	if gerr == nil || !strings.Contains(gerr.Error(), "TLS handshake timeout") || !Retryable(gerr) || took > 30*time.Second {
		t.Errorf("after %v: %v, want a retryable TLS handshake timeout after about 200ms", took, gerr)
	}
}

// TestRetry: retryable failures are tried again, up to 1 + Retries times
// with doubling waits; others, and success, end it at once; a cancelled
// context ends the wait.
func TestRetry(t *testing.T) {
	flaky := &TransferError{URL: "u", Got: 10, Err: io.ErrUnexpectedEOF}
	for _, tc := range []struct {
		name     string
		o        Options
		fails    int   // attempts that fail with err before one succeeds
		err      error // what they fail with
		attempts int
		want     string // "" = success
	}{
		{"succeeds", short, 0, nil, 1, ""},
		{"mended", short, 2, flaky, 3, ""},
		{"gives up", short, 10, flaky, 3, "GET u: the body broke off after 10 bytes: unexpected EOF (gave up after 3 attempts)"},
		{"no retries", Options{Retries: -1}, 10, flaky, 1, "GET u: the body broke off after 10 bytes: unexpected EOF"},
		{"not retryable", short, 10, errors.New("404 Not Found"), 1, "404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts, notified := 0, []time.Duration{}
			err := Retry(context.Background(), tc.o, func() error {
				if attempts++; attempts <= tc.fails {
					return tc.err
				}
				return nil
			}, func(_ error, wait time.Duration) { notified = append(notified, wait) })
			if attempts != tc.attempts || (tc.want == "") != (err == nil) || err != nil && err.Error() != tc.want {
				t.Errorf("%d attempts, %v; want %d and %q", attempts, err, tc.attempts, tc.want)
			}
			for i, w := range notified {
				if w != short.Backoff<<i {
					t.Errorf("wait %d was %v, want %v", i, w, short.Backoff<<i)
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	o := short
	o.Backoff = time.Hour
	time.AfterFunc(50*time.Millisecond, cancel)
	var err error
	within(t, time.Minute, func() {
		err = Retry(ctx, o, func() error { calls.Add(1); return flaky }, nil)
	})
	if calls.Load() != 1 || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before attempt 2") {
		t.Errorf("a cancelled wait: %d calls, %v", calls.Load(), err)
	}
}
