//go:build unix

package redistest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

// helperEnv selects a helper mode of this test binary, run as a child
// process by the tests below.
const helperEnv = "REDISTEST_HELPER"

// TestStartStop: a server of its own answers, and is gone after Stop,
// its folder removed.
func TestStartStop(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	srv, err := Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if srv.Addr() == ServerAddr() {
		t.Fatalf("Start gave Main's server %s", srv.Addr())
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if syscall.Kill(srv.PID(), 0) == nil {
		t.Errorf("server %d still runs after Stop", srv.PID())
	}
	if _, err := os.Stat(srv.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its folder %s is still there: %v", srv.dir, err)
	}
	if conn, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Stop", srv.Addr())
	}
}

// TestNotInstalled: a server that is not on PATH is ErrNotInstalled.
func TestNotInstalled(t *testing.T) {
	t.Setenv(EnvServer, "redis-server-not-installed")
	if _, err := Start(t.Context()); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Start = %v, want ErrNotInstalled", err)
	}
}

// TestProcessID reads INFO server's process_id.
func TestProcessID(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nprocess_id:4242\r\nrun_id:abc\r\n"
	if got := processID(info); got != 4242 {
		t.Errorf("processID = %d, want 4242", got)
	}
	if got := processID("# Server\r\n"); got != 0 {
		t.Errorf("processID of no process_id = %d, want 0", got)
	}
}

// helper runs this test binary as a child, run selecting its tests, with
// env added and no EnvSkipUnavailable unless env sets it.
func helper(t *testing.T, run string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvSkipUnavailable+"=") || strings.HasPrefix(kv, EnvServer+"=")
	}), append([]string{helperEnv + "=1"}, env...)...)
	return cmd
}

func TestHelperNeedsServer(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process only")
	}
	Addr(t)
	t.Error("Addr returned without a server")
}

// TestMainWithoutServer: a test binary without a server to start fails
// and says why; told to skip, its tests that need one skip with the
// reason.
func TestMainWithoutServer(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	missing := EnvServer + "=redis-server-not-installed"
	out, err := helper(t, "^TestHelperNeedsServer$", missing).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "not installed") || !strings.Contains(string(out), EnvSkipUnavailable+"=1") {
		t.Errorf("without a server: %v\n%s", err, out)
	}
	out, err = helper(t, "^TestHelperNeedsServer$", missing, EnvSkipUnavailable+"=1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- SKIP: TestHelperNeedsServer") || !strings.Contains(string(out), "not installed") {
		t.Errorf("told to skip: %v\n%s", err, out)
	}
}
