// Package netx gives the lab's downloads (the Hugging Face hub's files for
// lab lfm2 pull, SuiteSparse's matrices for lab sparse fetch) what a plain
// http.Get lacks: a limit on every wait, so that a server that accepts the
// connection and then says nothing, or stops in the middle of a file,
// fails the download within seconds instead of hanging it; and retries
// with backoff for the failures that another attempt can mend.
//
// Get limits the wait for the response headers and, while the body is
// read, the wait for each next byte (an idle timeout: a slow but steady
// download is never cut); Options.Client limits the connect and the TLS
// handshake; Retry repeats what Retryable says may succeed next time.
package netx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options are the limits of one download; zero fields take the defaults.
type Options struct {
	Connect time.Duration // the TCP connect and the TLS handshake, each (Client); default 30 s
	Header  time.Duration // from the request sent to the response's headers; default 60 s
	Idle    time.Duration // the longest wait for the next bytes of the body; default 60 s
	Retries int           // further attempts after a retryable failure (Retry); 0 = 3, negative = none
	Backoff time.Duration // the wait before the first retry, doubled before each next one; default 1 s
}

// withDefaults fills o's zero fields.
func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Connect, 30*time.Second)
	def(&o.Header, 60*time.Second)
	def(&o.Idle, 60*time.Second)
	def(&o.Backoff, time.Second)
	switch {
	case o.Retries == 0:
		o.Retries = 3
	case o.Retries < 0:
		o.Retries = 0
	}
	return o
}

// Client returns an HTTP client for downloads under o: proxies from the
// environment, as http.DefaultTransport takes them, and a dial and a TLS
// handshake each limited to o.Connect. Get adds the header and idle
// limits, to this client or any other.
func (o Options) Client() *http.Client {
	o = o.withDefaults()
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: o.Connect, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = o.Connect
	return &http.Client{Transport: t}
}

// TimeoutError is a wait that ran past its limit: for the response
// headers, or for the next bytes of the body after Got of Total bytes
// (Total -1 when the server did not say).
type TimeoutError struct {
	URL        string
	Headers    bool // waiting for the headers, else for data
	Limit      time.Duration
	Got, Total int64
}

func (e *TimeoutError) Error() string {
	switch {
	case e.Headers:
		return fmt.Sprintf("GET %s: no response headers within %v", e.URL, e.Limit)
	case e.Total >= 0:
		return fmt.Sprintf("GET %s: no data for %v after %d of %d bytes", e.URL, e.Limit, e.Got, e.Total)
	}
	return fmt.Sprintf("GET %s: no data for %v after %d bytes", e.URL, e.Limit, e.Got)
}

// Timeout reports true, as net.Error's Timeout does.
func (e *TimeoutError) Timeout() bool { return true }

// TransferError is a request that got no answer, or a body that broke off
// (Err, e.g. a reset connection or io.ErrUnexpectedEOF), other than by a
// timeout: another attempt may succeed.
type TransferError struct {
	URL string
	Got int64 // the body's bytes read before it broke; -1 for no answer
	Err error
}

func (e *TransferError) Error() string {
	if e.Got < 0 {
		return fmt.Sprintf("GET %s: %v", e.URL, e.Err)
	}
	return fmt.Sprintf("GET %s: the body broke off after %d bytes: %v", e.URL, e.Got, e.Err)
}

func (e *TransferError) Unwrap() error { return e.Err }

// Retryable reports whether err is a failure of the transfer, which
// another attempt may mend: a *TimeoutError or a *TransferError. An HTTP
// status, a caller's cancellation and what the caller makes of the data
// are not.
func Retryable(err error) bool {
	var t *TimeoutError
	var x *TransferError
	return errors.As(err, &t) || errors.As(err, &x)
}

// Get sends a GET of url with header through client under o's limits: the
// response headers must come within o.Header, and each Read of the body
// that waits more than o.Idle for data fails with a *TimeoutError (a Read
// that the body's reader is slow to call does not count). Other failures
// of the request and of the body's reads are *TransferErrors; a cancelled
// ctx gives its own error. The caller must close the body.
func Get(ctx context.Context, client *http.Client, url string, header http.Header, o Options) (*http.Response, error) {
	o = o.withDefaults()
	ctx, cancel := context.WithCancelCause(ctx)
	dog := &watchdog{cancel: cancel, err: &TimeoutError{URL: url, Headers: true, Limit: o.Header}}
	dog.arm(o.Header)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	dog.disarm()
	if err != nil {
		err = dog.explain(ctx, err, -1)
		cancel(nil)
		return nil, err
	}
	dog.mu.Lock()
	dog.err = &TimeoutError{URL: url, Limit: o.Idle, Total: resp.ContentLength}
	dog.mu.Unlock()
	resp.Body = &idleBody{body: resp.Body, ctx: ctx, dog: dog, idle: o.Idle}
	return resp, nil
}

// watchdog cancels a request's context with err when it is not disarmed
// in time.
type watchdog struct {
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	timer  *time.Timer
	err    *TimeoutError
}

// arm starts (or restarts) the countdown of d.
func (w *watchdog) arm(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(d, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.cancel(w.err)
		})
		return
	}
	w.timer.Reset(d)
}

// disarm stops the countdown.
func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Stop()
}

// explain turns an error of the request or of its body into what the
// caller sees: the *TimeoutError that cancelled it; the error itself when
// the caller's ctx ended; else a *TransferError after got bytes of the
// body (-1: no answer).
func (w *watchdog) explain(ctx context.Context, err error, got int64) error {
	var t *TimeoutError
	switch {
	case errors.As(context.Cause(ctx), &t):
		return t
	case ctx.Err() != nil:
		return err
	}
	return &TransferError{URL: w.err.URL, Got: got, Err: err}
}

// idleBody is a response body whose reads are limited to idle each.
type idleBody struct {
	body io.ReadCloser
	ctx  context.Context
	dog  *watchdog
	idle time.Duration
	got  int64 // the bytes read so far
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.dog.mu.Lock()
	b.dog.err.Got = b.got
	b.dog.mu.Unlock()
	b.dog.arm(b.idle)
	n, err := b.body.Read(p)
	b.dog.disarm()
	b.got += int64(n)
	if err != nil && err != io.EOF {
		err = b.dog.explain(b.ctx, err, b.got)
	}
	return n, err
}

// Close closes the body and releases the request's context.
func (b *idleBody) Close() error {
	b.dog.disarm()
	err := b.body.Close()
	b.dog.cancel(nil)
	return err
}

// Retry calls try until it succeeds, fails with an error that Retryable
// rejects, or has made 1 + o.Retries attempts, waiting o.Backoff before the
// second, twice that before the third, and so on; a ctx that ends stops
// the waiting. notify, when not nil, hears each failure that will be
// retried and the wait before the next attempt. The last error is
// returned, saying how many attempts were made when there were several.
func Retry(ctx context.Context, o Options, try func() error, notify func(err error, wait time.Duration)) error {
	o = o.withDefaults()
	wait := o.Backoff
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !Retryable(err) {
			return err
		}
		if attempt > o.Retries {
			if attempt > 1 {
				return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
			}
			return err
		}
		if notify != nil {
			notify(err, wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (then %w before attempt %d)", err, context.Cause(ctx), attempt+1)
		case <-time.After(wait):
		}
		wait *= 2
	}
}
