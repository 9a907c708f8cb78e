// Package interrupt undoes what a command has under way when a SIGINT or
// a SIGTERM ends it: whatever makes a temporary file or directory, or
// starts a process, registers its cleanup here for as long as the thing
// exists (Register), and Catch, installed by the command's main, runs every
// cleanup registered before the process exits. The main ends with Exit.
//
// Making a thing and registering its cleanup is one step that an
// interruption does not split: a signal that arrives meanwhile waits for it,
// and once the cleanups run, a goroutine that tries to make something new
// waits until the process has exited. So nothing made escapes its cleanup.
package interrupt

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sync"
	"syscall"
)

// registry holds the cleanups of what exists now.
var registry struct {
	// gate is held for reading while a thing is made and its cleanup
	// registered, and for writing, never to be released, once the
	// cleanups run.
	gate sync.RWMutex
	mu   sync.Mutex // guards the fields below
	next int
	// cleanups by registration number: they run newest first, so that a
	// process dies before the directory it works in is removed.
	cleanups map[int]func()
}

// Register runs create, which makes something (a temporary file, a started
// process) and returns the cleanup that undoes it, and registers that
// cleanup until unregister is called (when the thing is gone or has become
// permanent). create returns a nil cleanup with its error when it made
// nothing; the error is Register's. create must not call Register. Once
// the process is being interrupted, Register does not return: the process
// exits.
func Register(create func() (cleanup func(), err error)) (unregister func(), err error) {
	registry.gate.RLock()
	defer registry.gate.RUnlock()
	cleanup, err := create()
	if cleanup == nil {
		return func() {}, err
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.cleanups == nil {
		registry.cleanups = map[int]func(){}
	}
	id := registry.next
	registry.next++
	registry.cleanups[id] = cleanup
	return func() {
		registry.mu.Lock()
		delete(registry.cleanups, id)
		registry.mu.Unlock()
	}, err
}

// TempDir makes a new directory in the default directory for temporary
// files (os.MkdirTemp("", pattern)), registered until remove removes it.
func TempDir(pattern string) (dir string, remove func(), err error) {
	unregister, err := Register(func() (func(), error) {
		var err error
		if dir, err = os.MkdirTemp("", pattern); err != nil {
			return nil, err
		}
		return func() { os.RemoveAll(dir) }, nil
	})
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir); unregister() }, nil
}

// Start starts cmd in a process group of its own and registers killing
// that group (SIGKILL) until forget is called, after cmd.Wait: a tool the
// command runs, and whatever the tool starts, die with an interrupted
// command. A terminal's Ctrl-C reaches the command alone, whose cleanup
// then kills the group.
func Start(cmd *exec.Cmd) (forget func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return Register(func() (func(), error) {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		pgid := cmd.Process.Pid
		return func() { syscall.Kill(-pgid, syscall.SIGKILL) }, nil
	})
}

// Run is cmd.Run with Start's process group and cleanup.
func Run(cmd *exec.Cmd) error {
	forget, err := Start(cmd)
	if err != nil {
		return err
	}
	defer forget()
	return cmd.Wait()
}

// cleanUp runs every registered cleanup, newest first, once; it waits for
// a Register under way and keeps every later one waiting for good.
func cleanUp() {
	registry.gate.Lock()
	registry.mu.Lock()
	ids := make([]int, 0, len(registry.cleanups))
	for id := range registry.cleanups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	cleanups := make([]func(), len(ids))
	for i, id := range ids {
		cleanups[i] = registry.cleanups[id]
	}
	clear(registry.cleanups)
	registry.mu.Unlock()
	for _, c := range cleanups {
		c()
	}
}

// signals are the signals that Catch handles, with their names.
var signals = map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}

// Catch makes the first SIGINT or SIGTERM that the process receives write
// one line on w (name is the command's, to start it), run every registered
// cleanup and exit with status 128 + the signal's number: 130 for SIGINT,
// 143 for SIGTERM. A second signal exits at once, with its status.
func Catch(name string, w io.Writer) {
	sigs := make(chan os.Signal, 2)
	for s := range signals {
		signal.Notify(sigs, s)
	}
	go func() {
		sig := <-sigs
		fmt.Fprintf(w, "%s: stopped by %s: killing the processes it started and removing its temporary files (a second signal exits at once)\n", name, signals[sig])
		go func() { os.Exit(status(<-sigs)) }()
		cleanUp()
		os.Exit(status(sig))
	}()
}

// Exit exits with code, unless the process is being interrupted: then the
// cleanups that Catch runs end the process, with its status, and Exit
// waits for that. A command's main ends with it, since what the cleanups
// kill or remove may make the command fail meanwhile.
func Exit(code int) {
	registry.gate.RLock() // held until the exit: no cleanup starts in between
	os.Exit(code)
}

// status is the exit status of a process ended by sig, as a shell shows it.
func status(sig os.Signal) int { return 128 + int(sig.(syscall.Signal)) }
