package jupyter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"gpulab/engine/atomicfile"
	"gpulab/engine/interrupt"
)

// KernelConfig says how to start a kernel.
type KernelConfig struct {
	// Argv is the kernel's command line, as in a kernelspec's kernel.json:
	// "{connection_file}" is replaced by the connection file's path. For
	// GoNB: gonb --kernel {connection_file} --logtostderr.
	Argv []string
	// Env is the kernel's environment (nil: this process's). TMPDIR is set
	// to a directory that Close removes.
	Env []string
	// Log receives the kernel's stdout and stderr (nil: discarded; the last
	// lines still go into errors).
	Log io.Writer
	// StartTimeout bounds the start, until the kernel answers a
	// kernel_info_request (0: one minute).
	StartTimeout time.Duration
}

// Kernel is a running kernel process and this client's connection to it:
// the shell and control channels (DEALER sockets) and iopub (SUB). The
// kernel is started so that Close also ends every process it started (the
// programs of its cells, their children, GoNB's gopls); until Close, both
// those and its temporary directory are registered with package
// interrupt, so that a SIGINT or SIGTERM that ends the command ends them
// too.
type Kernel struct {
	cmd         *exec.Cmd
	kill        func() // kills the kernel and every process it started, and waits until they are gone
	forgetProcs func() // ends the registration of kill with package interrupt
	removeDir   func() // removes the kernel's directory (connection file, temporary files) and ends its registration
	key         []byte
	session     string

	ctx    context.Context // the sockets' lifeline
	cancel context.CancelFunc

	shell, control, iopub zmq4.Socket
	shellIn, iopubIn      chan *message

	exited  chan struct{} // closed once the process has exited
	waitErr error         // cmd.Wait's error, once exited is closed
	tail    *tailWriter   // the last lines the kernel printed
}

// executeReply is the part of an execute_reply that the runner uses.
type executeReply struct {
	Status         string `json:"status"` // ok, error or aborted
	ExecutionCount int    `json:"execution_count"`
	Ename          string `json:"ename"`
	Evalue         string `json:"evalue"`
}

// connection is a kernel connection file.
type connection struct {
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	IP              string `json:"ip"`
	Key             string `json:"key"`
	Transport       string `json:"transport"`
	SignatureScheme string `json:"signature_scheme"`
}

// StartKernel writes a connection file, starts the kernel on it, connects
// to its channels and waits until it answers.
func StartKernel(cfg KernelConfig) (*Kernel, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("jupyter: no kernel command line")
	}
	startTimeout := cfg.StartTimeout
	if startTimeout <= 0 {
		startTimeout = time.Minute
	}
	dir, removeDir, err := interrupt.TempDir("gpulab-kernel-*")
	if err != nil {
		return nil, fmt.Errorf("jupyter: directory for the connection file: %w", err)
	}
	ports, err := freePorts(5)
	if err != nil {
		removeDir()
		return nil, err
	}
	conn := connection{
		ShellPort: ports[0], IOPubPort: ports[1], StdinPort: ports[2], ControlPort: ports[3], HBPort: ports[4],
		IP: "127.0.0.1", Key: newID(), Transport: "tcp", SignatureScheme: "hmac-sha256",
	}
	// GoNB reads the kernel id from a file name kernel-<id>.json.
	connFile := filepath.Join(dir, "kernel-"+newID()+".json")
	data, _ := json.Marshal(conn) // a struct of strings and ints always encodes
	if err := atomicfile.WriteBytes(connFile, data); err != nil {
		removeDir()
		return nil, fmt.Errorf("jupyter: writing the connection file: %w", err)
	}

	argv := make([]string, len(cfg.Argv))
	for i, a := range cfg.Argv {
		argv[i] = strings.ReplaceAll(a, "{connection_file}", connFile)
	}
	k := &Kernel{
		cmd:       exec.Command(argv[0], argv[1:]...),
		removeDir: removeDir,
		key:       []byte(conn.Key),
		session:   newID(),
		shellIn:   make(chan *message, 64),
		iopubIn:   make(chan *message, 1024),
		exited:    make(chan struct{}),
		tail:      &tailWriter{},
	}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	// The kernel's temporary files (GoNB's work directory and pipes, the
	// cells' go build directories) go into dir too, so that Close removes
	// what a killed kernel would leave behind.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		k.cancel()
		removeDir()
		return nil, fmt.Errorf("jupyter: the kernel's temporary directory: %w", err)
	}
	k.cmd.Env = append(slices.Clip(cfg.Env), "TMPDIR="+tmp)
	if cfg.Env == nil {
		k.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	}
	out := io.Writer(k.tail)
	if cfg.Log != nil {
		out = io.MultiWriter(cfg.Log, k.tail)
	}
	k.cmd.Stdout, k.cmd.Stderr = out, out
	k.kill = killable(k.cmd)
	k.forgetProcs, err = interrupt.Register(func() (func(), error) {
		if err := k.cmd.Start(); err != nil {
			return nil, err
		}
		return k.kill, nil
	})
	if err != nil {
		k.cancel()
		removeDir()
		return nil, fmt.Errorf("jupyter: starting the kernel %q: %w", argv[0], err)
	}
	go func() {
		k.waitErr = k.cmd.Wait()
		close(k.exited)
		k.cancel() // stops dialing and receiving
	}()

	if err := k.connect(conn, startTimeout); err != nil {
		k.Close()
		return nil, fmt.Errorf("jupyter: kernel %q did not start: %w", argv[0], err)
	}
	return k, nil
}

// connect dials the kernel's channels and waits until a kernel_info_request
// is answered on shell and its status messages arrive on iopub: only then
// is the SUB socket surely subscribed (ZeroMQ drops what a PUB socket
// sends before a subscriber has joined).
func (k *Kernel) connect(conn connection, timeout time.Duration) error {
	const retry = 50 * time.Millisecond
	opts := []zmq4.Option{
		zmq4.WithDialerRetry(retry),
		zmq4.WithDialerMaxRetries(int(timeout / retry)),
		zmq4.WithLogger(log.New(io.Discard, "", 0)),
	}
	k.shell, k.control, k.iopub = zmq4.NewDealer(k.ctx, opts...), zmq4.NewDealer(k.ctx, opts...), zmq4.NewSub(k.ctx, opts...)
	for _, c := range []struct {
		s    zmq4.Socket
		port int
	}{{k.shell, conn.ShellPort}, {k.control, conn.ControlPort}, {k.iopub, conn.IOPubPort}} {
		if err := c.s.Dial(fmt.Sprintf("tcp://%s:%d", conn.IP, c.port)); err != nil {
			return k.explain(err)
		}
	}
	if err := k.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		return err
	}
	go k.receive(k.shell, k.shellIn)
	go k.receive(k.iopub, k.iopubIn)

	deadline := time.After(timeout)
	asked := map[string]bool{}
	replied, heard := false, false
	for !replied || !heard {
		id, err := k.send(k.shell, "kernel_info_request", struct{}{})
		if err != nil {
			return k.explain(err)
		}
		asked[id] = true
		again := time.After(500 * time.Millisecond)
	wait:
		for !replied || !heard {
			select {
			case m := <-k.shellIn:
				replied = replied || m.Header.MsgType == "kernel_info_reply"
			case m := <-k.iopubIn:
				heard = heard || asked[m.Parent.MsgID]
			case <-again:
				break wait
			case <-deadline:
				return fmt.Errorf("no answer to kernel_info_request within %v", timeout)
			case <-k.exited:
				return k.explain(nil)
			}
		}
	}
	return nil
}

// receive decodes the messages of one socket into out until it is closed.
// A message with a wrong signature is dropped: it did not come from our
// kernel.
func (k *Kernel) receive(s zmq4.Socket, out chan<- *message) {
	for {
		raw, err := s.Recv()
		if err != nil {
			return
		}
		m, err := decode(k.key, raw.Frames)
		if err != nil {
			fmt.Fprintf(k.tail, "lab nbrun: dropped a message: %v\n", err)
			continue
		}
		select {
		case out <- m:
		case <-k.ctx.Done():
			return
		}
	}
}

// send sends a request on a DEALER socket and returns its message id.
func (k *Kernel) send(s zmq4.Socket, msgType string, content any) (string, error) {
	frames, id, err := encode(k.key, k.session, msgType, content)
	if err != nil {
		return "", err
	}
	if err := s.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		return "", fmt.Errorf("sending %s: %w", msgType, err)
	}
	return id, nil
}

// Execute runs code in the kernel and calls output with each iopub message
// that the execution produced (stream, display_data, error, ...), until the
// kernel is idle again and has replied. A cancelled ctx (a time limit) or a
// kernel that exits ends it with an error.
func (k *Kernel) Execute(ctx context.Context, code string, output func(msgType string, content json.RawMessage) error) (executeReply, error) {
	var reply executeReply
	id, err := k.send(k.shell, "execute_request", map[string]any{
		"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true,
	})
	if err != nil {
		return reply, k.explain(err)
	}
	replied, idle := false, false
	for !replied || !idle {
		select {
		case m := <-k.shellIn:
			if m.Parent.MsgID != id || m.Header.MsgType != "execute_reply" {
				continue
			}
			if err := json.Unmarshal(m.Content, &reply); err != nil {
				return reply, fmt.Errorf("execute_reply is not JSON: %w", err)
			}
			replied = true
		case m := <-k.iopubIn:
			if m.Parent.MsgID != id {
				continue
			}
			if m.Header.MsgType == "status" {
				var s struct {
					State string `json:"execution_state"`
				}
				json.Unmarshal(m.Content, &s)
				idle = s.State == "idle"
				continue
			}
			if err := output(m.Header.MsgType, m.Content); err != nil {
				return reply, err
			}
		case <-ctx.Done():
			return reply, ctx.Err()
		case <-k.exited:
			return reply, k.explain(nil)
		}
	}
	return reply, nil
}

// Close asks the kernel to shut down (shutdown_request on control), waits
// a few seconds for it to exit, then kills it and whatever it and its
// cells left running. It removes the kernel's directory (the connection
// file, its temporary files).
func (k *Kernel) Close() {
	select {
	case <-k.exited:
	default:
		if _, err := k.send(k.control, "shutdown_request", map[string]bool{"restart": false}); err == nil {
			select {
			case <-k.exited:
			case <-time.After(5 * time.Second):
			}
		}
	}
	k.kill()
	k.forgetProcs()
	<-k.exited
	k.cancel()
	for _, s := range []zmq4.Socket{k.shell, k.control, k.iopub} {
		if s != nil {
			s.Close()
		}
	}
	k.removeDir()
}

// explain adds to err whether the kernel has exited, and the last lines it
// printed, which usually say why.
func (k *Kernel) explain(err error) error {
	msg := "the kernel is running"
	select {
	case <-k.exited:
		msg = fmt.Sprintf("the kernel exited (%v)", k.waitErr)
	case <-time.After(100 * time.Millisecond): // it may be exiting right now
	}
	if err != nil {
		msg = err.Error() + "; " + msg
	}
	if t := k.tail.lastLines(20); t != "" {
		msg += "; its last output:\n" + t
	}
	return errors.New(msg)
}

// freePorts finds n free TCP ports on the loopback interface (as
// jupyter_client does: listen on port 0, note the port, close).
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("jupyter: finding a free port for the kernel: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailWriter keeps the last 16 KiB written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	const keep = 16 << 10
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	return len(p), nil
}

// lastLines returns the last n lines written.
func (t *tailWriter) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
