package ddbtest

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestMain(m *testing.M) { Main(m) }

// helperEnv selects a helper mode of this test binary, run as a child
// process by the tests below.
const helperEnv = "DDBTEST_HELPER"

func TestMainStartsLocalServer(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	if server == nil {
		t.Fatal("Main started no server although AWS_ENDPOINT_URL_DYNAMODB was unset")
	}
	if got := os.Getenv(EnvEndpoint); got != server.Endpoint() {
		t.Errorf("%s = %q, want %q", EnvEndpoint, got, server.Endpoint())
	}
	for _, k := range []string{"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if os.Getenv(k) == "" {
			t.Errorf("%s is not set", k)
		}
	}
}

func TestClientTalksToLocalServer(t *testing.T) {
	c := Client(t)
	if _, err := c.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
}

func TestTablesFromTemplate(t *testing.T) {
	c := Client(t)
	var first TableNames
	t.Run("create", func(t *testing.T) {
		first = Tables(t, c)
		for _, id := range []string{"IdempotencyTable", "LedgerTable"} {
			name, ok := first[id]
			if !ok {
				t.Fatalf("TableNames has no %s: %v", id, first)
			}
			if !strings.HasPrefix(name, id+"-") {
				t.Errorf("%s physical name %q does not start with %q", id, name, id+"-")
			}
			out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatalf("DescribeTable %s: %v", name, err)
			}
			if out.Table.TableStatus != types.TableStatusActive {
				t.Errorf("%s status %s", name, out.Table.TableStatus)
			}
		}
		ttl, err := c.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(first["IdempotencyTable"])})
		if err != nil {
			t.Fatalf("DescribeTimeToLive: %v", err)
		}
		if ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
			t.Errorf("IdempotencyTable TTL status %s, want ENABLED", ttl.TimeToLiveDescription.TimeToLiveStatus)
		}

		second := Tables(t, c)
		for id, name := range second {
			if name == first[id] {
				t.Errorf("two calls gave %s the same name %s", id, name)
			}
		}
	})
	if len(first) == 0 {
		t.Fatal("no tables were created")
	}
	out, err := c.ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	for _, name := range first {
		if slices.Contains(out.TableNames, name) {
			t.Errorf("table %s still exists after its test ended", name)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		wantErr  error
	}{
		{"loopback IPv4", "http://127.0.0.1:8000", nil},
		{"loopback range", "http://127.0.0.2:8000", nil},
		{"localhost", "http://localhost:8000", nil},
		{"loopback IPv6", "http://[::1]:8000", nil},
		{"AWS", "https://dynamodb.us-east-1.amazonaws.com", ErrNotLocal},
		{"private address", "http://10.0.0.5:8000", ErrNotLocal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkEndpoint(tt.endpoint)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("checkEndpoint(%q) = %v, want %v", tt.endpoint, err, tt.wantErr)
			}
		})
	}
	if err := checkEndpoint(""); err == nil || !strings.Contains(err.Error(), "ddbtest.Main") {
		t.Errorf("checkEndpoint(\"\") = %v, want a hint to call ddbtest.Main", err)
	}
}

func TestUniqueSuffix(t *testing.T) {
	a, b := uniqueSuffix(t), uniqueSuffix(t)
	if a == b {
		t.Errorf("two suffixes are equal: %s", a)
	}
	t.Run("odd/name with spaces & symbols", func(t *testing.T) {
		s := uniqueSuffix(t)
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
				t.Errorf("suffix %q has %q, not allowed in table names", s, r)
			}
		}
	})
}

// helperProcess runs this test binary with a helper mode and extra
// environment, returning the command (not yet started).
func helperProcess(t *testing.T, mode, run string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+run+"$", "-test.count=1", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvEndpoint+"=")
	}), append(env, helperEnv+"="+mode)...)
	return cmd
}

func TestHelperReuse(t *testing.T) {
	if os.Getenv(helperEnv) != "reuse" {
		t.Skip("helper process only")
	}
	if server != nil {
		t.Fatalf("Main started a server although %s was set", EnvEndpoint)
	}
	if got, want := os.Getenv(EnvEndpoint), os.Getenv("DDBTEST_WANT_ENDPOINT"); got != want {
		t.Fatalf("%s = %q, want %q", EnvEndpoint, got, want)
	}
	Tables(t, Client(t))
}

func TestMainReusesGivenEndpoint(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	ep := os.Getenv(EnvEndpoint)
	cmd := helperProcess(t, "reuse", "TestHelperReuse", EnvEndpoint+"="+ep, "DDBTEST_WANT_ENDPOINT="+ep)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestHelperReuse") {
		t.Fatalf("helper did not pass:\n%s", out)
	}
}

func TestHelperBlock(t *testing.T) {
	if os.Getenv(helperEnv) != "block" {
		t.Skip("helper process only")
	}
	os.Stdout.WriteString("server " + strconv.Itoa(server.PID()) + "\n")
	time.Sleep(time.Minute)
	t.Error("not interrupted")
}

func TestMainStopsServerOnSignal(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := helperProcess(t, "block", "TestHelperBlock")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := 0
			sc := bufio.NewScanner(stdout)
			for pid == 0 && sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "server" {
					pid, _ = strconv.Atoi(f[1])
				}
			}
			if pid == 0 {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatal("helper did not report its server")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = bufio.NewReader(stdout).WriteTo(discard{}) }()
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Errorf("helper exit = %v, want code %d", err, 128+int(sig))
			}
			deadline := time.Now().Add(10 * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("server %d still running after the helper got %s", pid, sig)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestTablesFromMissingTemplate(t *testing.T) {
	if _, err := templateTables(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("templateTables(missing) = %v, want a not-exist error", err)
	}
}
