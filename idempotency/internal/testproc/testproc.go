// Package testproc runs a test server as a child process: on a free
// loopback port, in its own process group, ended by the kernel on Linux
// when the test binary dies, its output kept for the errors, and stopped
// with SIGTERM then SIGKILL to its group. idemtest runs DynamoDB Local
// with it, and redisstore's tests redis-server.
package testproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// TailSize is how many of the last bytes a server printed Output keeps.
const TailSize = 8 << 10

// probeTimeout bounds one call of Spec.Ready.
const probeTimeout = 2 * time.Second

// Spec says how to run a server and how to tell that it is ready.
type Spec struct {
	// Name is the server's name in the errors of Start: "start NAME: ...".
	Name string
	// Command returns the command that runs the server on port. Start
	// sets its SysProcAttr, Stdout, Stderr and WaitDelay.
	Command func(port int) *exec.Cmd
	// Ready reports whether process pid answers on port, in one try
	// within ctx. It should tell the process's answer from that of another
	// one holding the port (OwnsPort can).
	Ready func(ctx context.Context, port, pid int) bool
	// Addr is the address of port that the NotReady error names.
	Addr func(port int) string
	// PortTaken reports whether the output of a server that exited while
	// starting says its port was in use: Start then tries another port,
	// Attempts times in all. Nil: it never was.
	PortTaken func(output string) bool
	Attempts  int
	// Poll is how long to wait between calls of Ready, Grace how long
	// Stop waits after SIGTERM before SIGKILL.
	Poll, Grace time.Duration
	// Exited wraps the errors of a server that ended by itself, NotReady
	// those of one that did not answer in time: the caller's sentinels.
	Exited, NotReady error
}

// Proc is a server that Start runs.
type Proc struct {
	spec Spec
	pid  int
	port int
	out  *tail

	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// PID is the server's process id.
func (p *Proc) PID() int { return p.pid }

// Port is the server's port.
func (p *Proc) Port() int { return p.port }

// Output is the last TailSize bytes the server printed.
func (p *Proc) Output() string { return p.out.String() }

// Start runs the server on a free loopback port and waits until it is
// ready (spec.Ready). ctx bounds the start only; the server runs until
// Stop. On Linux the kernel also ends it when the test binary exits.
// When the server exits while starting because its port was taken in the
// meantime (spec.PortTaken), Start tries another, spec.Attempts times in
// all.
func Start(ctx context.Context, spec Spec) (*Proc, error) {
	for i := 1; ; i++ {
		port, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("start %s: pick a port: %w", spec.Name, err)
		}
		p, err := start(ctx, spec, port)
		if err == nil {
			return p, nil
		}
		if p == nil || !errors.Is(err, spec.Exited) || spec.PortTaken == nil || !spec.PortTaken(p.Output()) || i >= spec.Attempts {
			return nil, err
		}
	}
}

// start runs the server on port. On a failure after the process started
// it returns the process with the error, for its output.
func start(ctx context.Context, spec Spec, port int) (*Proc, error) {
	p := &Proc{spec: spec, port: port, out: &tail{}, done: make(chan struct{})}
	cmd := spec.Command(port)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = spec.Grace
	// The parent-death signal is tied to the thread that started the
	// child: that thread starts it and waits for it, locked, so it lives
	// as long as the child does.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(p.done)
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, cmd.Path, err)
	}
	p.pid = cmd.Process.Pid
	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop()
		return p, err
	}
	return p, nil
}

// waitReady calls spec.Ready until it reports the server ready.
func (p *Proc) waitReady(ctx context.Context) error {
	tick := time.NewTicker(p.spec.Poll)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%w while starting on port %d (%v); its output:\n%s", p.spec.Exited, p.port, p.waitErr, p.Output())
		default:
		}
		callCtx, cancel := context.WithTimeout(ctx, probeTimeout)
		ready := p.spec.Ready(callCtx, p.port, p.pid)
		cancel()
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w at %s: %w; its output:\n%s", p.spec.NotReady, p.spec.Addr(p.port), ctx.Err(), p.Output())
		case <-p.done:
		case <-tick.C:
		}
	}
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after
// spec.Grace, and waits for it to exit. It may be called more than once
// and concurrently; it reports an error only when the server had already
// exited by itself.
func (p *Proc) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			p.stopErr = fmt.Errorf("%w (%v); its output:\n%s", p.spec.Exited, p.waitErr, p.Output())
			return
		default:
		}
		signalGroup(p.pid, false)
		select {
		case <-p.done:
		case <-time.After(p.spec.Grace):
			signalGroup(p.pid, true)
			<-p.done
		}
		// Anything left in its group goes too.
		signalGroup(p.pid, true)
	})
	return p.stopErr
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// StopOnSignal calls stop on SIGINT or SIGTERM, then exits with 128 plus
// the signal's number. The function it returns stops listening.
func StopOnSignal(stop func()) func() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		stop()
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()
	return func() { signal.Stop(sigs) }
}

// SkipExamples skips the Examples (-test.skip=^Example), unless the
// command line already skips something: an Example cannot skip itself,
// and one that needs a server that is not there would fail. It says so
// on stderr, after prefix.
func SkipExamples(prefix string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.skip")
	if f == nil || f.Value.String() != "" {
		return
	}
	if err := f.Value.Set("^Example"); err == nil {
		fmt.Fprintln(os.Stderr, prefix+"the Examples skip too (-test.skip=^Example)")
	}
}

// tail keeps the last TailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > TailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailSize:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
