package ddblocal

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// startServer starts a server for one test and stops it at cleanup.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func client(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

func listTableNames(t *testing.T, endpoint string) []string {
	t.Helper()
	out, err := client(endpoint).ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	return out.TableNames
}

func createTable(t *testing.T, endpoint, name string) {
	t.Helper()
	_, err := client(endpoint).CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
}

func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartAndStop(t *testing.T) {
	s := startServer(t, Options{})
	if want := "http://127.0.0.1:" + strconv.Itoa(s.Port()); s.Endpoint() != want {
		t.Errorf("Endpoint() = %q, want %q", s.Endpoint(), want)
	}
	if got := listTableNames(t, s.Endpoint()); len(got) != 0 {
		t.Errorf("new in-memory server has tables %v", got)
	}
	createTable(t, s.Endpoint(), "table1")
	if got := listTableNames(t, s.Endpoint()); !slices.Equal(got, []string{"table1"}) {
		t.Errorf("ListTables = %v, want [t1]", got)
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	waitGone(t, s.PID())
	if portOpen(s.Port()) {
		t.Errorf("port %d still accepts connections after Stop", s.Port())
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v, want nil (idempotent)", err)
	}
}

func TestDataDirPersistsAcrossRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first := startServer(t, Options{DataDir: dir})
	createTable(t, first.Endpoint(), "persisted")
	if err := first.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	second := startServer(t, Options{DataDir: dir})
	if got := listTableNames(t, second.Endpoint()); !slices.Equal(got, []string{"persisted"}) {
		t.Errorf("after restart ListTables = %v, want [persisted]", got)
	}

	memory := startServer(t, Options{})
	if got := listTableNames(t, memory.Endpoint()); len(got) != 0 {
		t.Errorf("in-memory server sees tables %v", got)
	}
}

func TestStopReportsUnexpectedExit(t *testing.T) {
	s := startServer(t, Options{})
	if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	err := s.Stop()
	if !errors.Is(err, ErrExited) {
		t.Fatalf("Stop after the process died = %v, want ErrExited", err)
	}
	if err2 := s.Stop(); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second Stop = %v, want the same error", err2)
	}
}

func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	_, err = Start(t.Context(), Options{Port: port})
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Start on a taken port = %v, want ErrPortInUse", err)
	}
}

func TestOwnsPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checked through /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	free, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pid  int
		port int
		want bool
	}{
		{"own listener", os.Getpid(), port, true},
		{"other process", os.Getppid(), port, false},
		{"nobody listens", os.Getpid(), free, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownsPort(tt.pid, tt.port); got != tt.want {
				t.Errorf("ownsPort(%d, %d) = %v, want %v", tt.pid, tt.port, got, tt.want)
			}
		})
	}
}

func TestMissingJar(t *testing.T) {
	empty := t.TempDir()
	modRoot := t.TempDir()
	if err := os.WriteFile(filepath.Join(modRoot, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(modRoot, "a", "b")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	jarOnly := t.TempDir()
	if err := os.WriteFile(filepath.Join(jarOnly, jarName), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		run  func() error
		want []string
	}{
		{"Options.JarDir without the jar", func() error {
			_, err := Start(t.Context(), Options{JarDir: empty})
			return err
		}, []string{"no DynamoDBLocal.jar in " + empty, "npm ci --prefix tools", "make deps"}},
		{"Options.JarDir without the native libraries", func() error {
			_, err := Start(t.Context(), Options{JarDir: jarOnly})
			return err
		}, []string{"no DynamoDBLocal_lib folder", "npm ci --prefix tools"}},
		{"module without node_modules", func() error {
			_, err := locateFrom(nested)
			return err
		}, []string{"npm ci --prefix tools", "make deps", "in " + modRoot, EnvDir}},
		{"no module root", func() error {
			_, err := locateFrom(empty)
			return err
		}, []string{"no go.mod found", EnvDir}},
		{"DYNAMODB_LOCAL_DIR without the jar", func() error {
			t.Setenv(EnvDir, empty)
			_, err := Locate()
			return err
		}, []string{EnvDir + "=" + empty, "npm ci --prefix tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, ErrJarNotFound) {
				t.Fatalf("err = %v, want ErrJarNotFound", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestMissingJava(t *testing.T) {
	_, err := Start(t.Context(), Options{Java: filepath.Join(t.TempDir(), "no-java")})
	if !errors.Is(err, ErrJavaNotFound) {
		t.Fatalf("err = %v, want ErrJavaNotFound", err)
	}
}

func TestLocateFindsInstalledJar(t *testing.T) {
	dir, err := Locate()
	if err != nil {
		t.Fatalf("Locate: %v", err)
	}
	if err := checkJarDir(dir); err != nil {
		t.Errorf("Locate returned %s: %v", dir, err)
	}
	t.Setenv(EnvDir, dir)
	if got, err := Locate(); err != nil || got != dir {
		t.Errorf("Locate with %s set = %q, %v; want %q", EnvDir, got, err, dir)
	}
}

// helperEnv makes the test binary act as a process that starts a server
// and then panics (see TestServerDiesWithPanickingParent).
const helperEnv = "DDBLOCAL_TEST_PANIC_HELPER"

func TestServerDiesWithPanickingParent(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		s, err := Start(context.Background(), Options{})
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("pid " + strconv.Itoa(s.PID()) + " port " + strconv.Itoa(s.Port()) + "\n")
		panic("test binary panics with the server running")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux-only")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestServerDiesWithPanickingParent$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid, port int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "pid" {
			pid, _ = strconv.Atoi(f[1])
			port, _ = strconv.Atoi(f[3])
		} else if len(f) > 0 && f[0] == "error" {
			t.Errorf("helper: %s", sc.Text())
		}
	}
	err = cmd.Wait()
	if pid == 0 {
		t.Fatalf("helper did not report a server (exit: %v)", err)
	}
	if err == nil {
		t.Fatal("helper exited cleanly, want a panic")
	}
	waitGone(t, pid)
	if portOpen(port) {
		t.Errorf("port %d still open after the parent died", port)
	}
}
