// Package redistest gives redisstore's tests a real Redis: one
// redis-server per test binary, in memory (no snapshot, no append-only file),
// on a free loopback port, stopped when the tests end.
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		store := redisstore.New(redistest.Client(t), redistest.Prefix(t))
//		...
//	}
//
// The server is $REDIS_SERVER (valkey-server serves too), or else the
// redis-server on PATH (make redis installs it). When it is not
// installed, Main says so and the test binary fails, unless
// $IDEMTEST_SKIP_UNAVAILABLE is set: then the tests run, and each one
// that asks for a client skips with the reason. A server that is
// installed but does not start fails the test binary either way.
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// Environment variables.
const (
	// EnvServer names the server to run, a path or a name on PATH:
	// "redis-server" when unset.
	EnvServer = "REDIS_SERVER"
	// EnvSkipUnavailable, set to anything but "", turns a server that is
	// not installed into skips, as it does for idemtest's DynamoDB Local.
	EnvSkipUnavailable = idemtest.EnvSkipUnavailable
)

// Errors of Start.
var (
	// ErrNotInstalled: the server is not on PATH (or EnvServer names
	// none).
	ErrNotInstalled = errors.New("redis-server is not installed")
	// ErrExited: the server ended by itself.
	ErrExited = errors.New("redis-server exited")
	// ErrNotReady: the server did not answer in time.
	ErrNotReady = errors.New("redis-server did not answer")
)

const (
	startTimeout = 30 * time.Second
	stopGrace    = 5 * time.Second
	pollInterval = 20 * time.Millisecond
	portAttempts = 3
	tailSize     = 8 << 10
)

// Server is a redis-server that Start runs.
type Server struct {
	pid  int
	port int
	addr string
	dir  string
	out  *tail

	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// Addr is the server's address, 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.addr }

// PID is the server's process id.
func (s *Server) PID() int { return s.pid }

// Output is the last few kilobytes the server printed.
func (s *Server) Output() string { return s.out.String() }

// Binary is the server Start runs: EnvServer, else redis-server, looked
// up on PATH. It fails with ErrNotInstalled when there is none.
func Binary() (string, error) {
	name := os.Getenv(EnvServer)
	if name == "" {
		name = "redis-server"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w (make redis installs it: apt-get install redis-server)", ErrNotInstalled, err)
	}
	return path, nil
}

// Start runs the server (Binary) in memory on a free loopback port and
// waits until it answers PING and reports its own process id. ctx bounds
// the start only; the server runs until Stop. On Linux the kernel also
// ends it when the process that started it exits.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for i := 1; ; i++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start %s: pick a port: %w", bin, err)
		}
		s, err := start(ctx, bin, port)
		if err == nil {
			return s, nil
		}
		// Another process may have taken the port in the meantime.
		if s == nil || !errors.Is(err, ErrExited) || !strings.Contains(s.Output(), "Address already in use") || i == portAttempts {
			return nil, err
		}
	}
}

// start runs bin on port. On a failure after the process started it
// returns the server with the error, for its output.
func start(ctx context.Context, bin string, port int) (*Server, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{
		port: port,
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:  dir,
		out:  &tail{},
		done: make(chan struct{}),
	}
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", "")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = stopGrace
	// The parent-death signal is tied to the thread that started the
	// child: that thread starts it and waits for it, locked, so it lives
	// as long as the child does.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(s.done)
			return
		}
		started <- nil
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s.pid = cmd.Process.Pid
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return s, err
	}
	return s, nil
}

// waitReady polls PING until this process answers on its port: INFO
// names its process id, so that another server on the port is not taken
// for it.
func (s *Server) waitReady(ctx context.Context) error {
	client := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: time.Second, PoolSize: 1})
	defer client.Close()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return fmt.Errorf("%w while starting on port %d (%v); its output:\n%s", ErrExited, s.port, s.waitErr, s.Output())
		default:
		}
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := client.Ping(callCtx).Err()
		var info string
		if err == nil {
			info, err = client.Info(callCtx, "server").Result()
		}
		cancel()
		if err == nil && processID(info) == s.pid {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w at %s: %w; its output:\n%s", ErrNotReady, s.addr, ctx.Err(), s.Output())
		case <-s.done:
		case <-tick.C:
		}
	}
}

// processID is the process_id of an INFO server answer, 0 without one.
func processID(info string) int {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "process_id:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after a
// grace period, waits for it to exit and removes its folder. It may be
// called more than once and concurrently; it reports an error only when
// the server had already exited by itself.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		defer os.RemoveAll(s.dir)
		select {
		case <-s.done:
			s.stopErr = fmt.Errorf("%w (%v); its output:\n%s", ErrExited, s.waitErr, s.Output())
			return
		default:
		}
		signalGroup(s.pid, false)
		select {
		case <-s.done:
		case <-time.After(stopGrace):
			signalGroup(s.pid, true)
			<-s.done
		}
		signalGroup(s.pid, true)
	})
	return s.stopErr
}

// The server Main started, or why there is none when EnvSkipUnavailable
// let the tests run without it.
var (
	server      *Server
	unavailable error
)

// Main runs the tests of a package that needs Redis: call it from
// TestMain; it does not return. It starts a server (Start), runs the
// tests and exits with their code; the server is stopped when they end,
// and on SIGINT and SIGTERM; on Linux the kernel ends it if the test
// binary dies any other way.
//
// When the server is not installed Main prints why and exits 1, or, with
// EnvSkipUnavailable set, runs the tests without it (the Examples, which
// cannot skip, are skipped with -test.skip=^Example). When it is
// installed but cannot be started, Main prints why and exits 1.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	srv, err := Start(ctx)
	cancel()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && os.Getenv(EnvSkipUnavailable) != "" {
			unavailable = err
			fmt.Fprintf(os.Stderr, "redistest: the tests that need Redis skip (%s is set): %v\n", EnvSkipUnavailable, err)
			skipExamples()
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "redistest: cannot start a Redis server: %v\n", err)
		if errors.Is(err, ErrNotInstalled) {
			fmt.Fprintf(os.Stderr, "redistest: to skip the tests that need it instead, set %s=1\n", EnvSkipUnavailable)
		}
		return 1
	}
	server = srv
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: %v\n", err)
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig := <-sigs
		_ = srv.Stop()
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()
	return m.Run()
}

// skipExamples skips the Examples (-test.skip=^Example), unless the
// command line already skips something.
func skipExamples() {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.skip")
	if f == nil || f.Value.String() != "" {
		return
	}
	if err := f.Value.Set("^Example"); err == nil {
		fmt.Fprintln(os.Stderr, "redistest: the Examples skip too (-test.skip=^Example)")
	}
}

// Addr is the address of the server Main started. Without one it skips
// the test with the reason when Main was told to (EnvSkipUnavailable),
// and fails it otherwise.
func Addr(t testing.TB) string {
	t.Helper()
	switch {
	case server != nil:
		return server.Addr()
	case unavailable != nil:
		t.Skipf("redistest: %v", unavailable)
	default:
		t.Fatal("redistest: no Redis server: call redistest.Main(m) from TestMain")
	}
	return ""
}

// ServerAddr is the address of the server Main started, "" without one:
// for an Example, which cannot skip.
func ServerAddr() string {
	if server == nil {
		return ""
	}
	return server.Addr()
}

// Client returns a client of the server Main started (Addr), closed when
// the test ends, then opts applied to its options.
func Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: Addr(t)}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Prefix is a key prefix unique to this call, the test's name and random
// hex, so that tests sharing the server never see each other's keys.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test:" + t.Name() + ":" + hex.EncodeToString(b[:]) + ":"
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
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

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
