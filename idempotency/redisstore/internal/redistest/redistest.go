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
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/internal/testproc"
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
)

// Server is a redis-server that Start runs.
type Server struct {
	proc *testproc.Proc
	addr string
	dir  string

	stopOnce sync.Once
	stopErr  error
}

// Addr is the server's address, 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.addr }

// PID is the server's process id.
func (s *Server) PID() int { return s.proc.PID() }

// Output is the last few kilobytes the server printed.
func (s *Server) Output() string { return s.proc.Output() }

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
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	proc, err := testproc.Start(ctx, testproc.Spec{
		Name: filepath.Base(bin),
		Command: func(port int) *exec.Cmd {
			cmd := exec.Command(bin,
				"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no",
				"--dir", dir, "--daemonize", "no", "--logfile", "")
			cmd.Dir = dir
			return cmd
		},
		Ready: ready,
		Addr:  addr,
		PortTaken: func(out string) bool {
			return strings.Contains(out, "Address already in use")
		},
		Attempts: portAttempts,
		Poll:     pollInterval,
		Grace:    stopGrace,
		Exited:   ErrExited,
		NotReady: ErrNotReady,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Server{proc: proc, addr: addr(proc.Port()), dir: dir}, nil
}

// addr is the address of a server on port.
func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// ready reports whether process pid answers PING on port: INFO names its
// process id, so that another server on the port is not taken for it.
func ready(ctx context.Context, port, pid int) bool {
	client := redis.NewClient(&redis.Options{Addr: addr(port), MaxRetries: -1, DialTimeout: time.Second, PoolSize: 1})
	defer client.Close()
	err := client.Ping(ctx).Err()
	var info string
	if err == nil {
		info, err = client.Info(ctx, "server").Result()
	}
	return err == nil && processID(info) == pid
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
		s.stopErr = s.proc.Stop()
		_ = os.RemoveAll(s.dir)
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
			testproc.SkipExamples("redistest: ")
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
	defer testproc.StopOnSignal(func() { _ = srv.Stop() })()
	return m.Run()
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
