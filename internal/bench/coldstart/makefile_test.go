package coldstart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/exactlyonce/transfers/internal/buildcheck"
)

// TestBuildMatchesMakefile: the bootstrap the benchmark measures for
// arm64 is the one the Makefile's build-<LogicalId> recipe builds, which
// is also what sam build ships (BuildMethod: makefile): the same build
// settings (go version -m) and the same size.
func TestBuildMatchesMakefile(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH to run the Makefile's recipe")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bins, err := build(context.Background(), Options{ModuleRoot: root, Dir: filepath.Join(dir, "bench"), Go: "go"},
		[]Function{{Name: "orchestrator", Package: "./functions/orchestrator"}}, "linux", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(dir, "make")
	cmd := exec.Command("make", "--no-print-directory", "-s", "build-OrchestratorFunction", "ARTIFACTS_DIR="+artifacts)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-OrchestratorFunction: %v\n%s", err, out)
	}
	if err := buildcheck.Same(filepath.Join(artifacts, "bootstrap"), bins[0]); err != nil {
		t.Fatalf("the benchmark's bootstrap is not the Makefile's: %v", err)
	}
}
