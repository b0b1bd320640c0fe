package buildcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build builds testdata/hello for linux/arm64 with flags into dir/name.
func build(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", out, "./testdata/hello")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

func TestSame(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH to build the test binaries")
	}
	dir := t.TempDir()
	makefile := []string{"-trimpath", "-ldflags", "-s -w", "-tags", "lambda.norpc"}
	want := build(t, dir, "want", makefile...)
	cases := []struct {
		name  string
		flags []string
		// diffs are substrings the error must hold; none for the same build.
		diffs []string
	}{
		{"same flags, another output path", makefile, nil},
		// With -trimpath, go records no -ldflags; without it, it does.
		{"without -trimpath", []string{"-ldflags", "-s -w", "-tags", "lambda.norpc"}, []string{"-trimpath=true", `-ldflags="-s -w"`}},
		// Under -trimpath only the size shows that a binary kept its
		// symbols and debug information.
		{"with debug information", []string{"-trimpath", "-tags", "lambda.norpc"}, []string{"size:"}},
		{"without lambda.norpc", []string{"-trimpath", "-ldflags", "-s -w"}, []string{"-tags=lambda.norpc"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := build(t, dir, "got"+string(rune('a'+i)), tc.flags...)
			err := Same(want, got)
			if len(tc.diffs) == 0 {
				if err != nil {
					t.Fatalf("Same: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Same: nil, want differences %q", tc.diffs)
			}
			for _, d := range tc.diffs {
				if !strings.Contains(err.Error(), d) {
					t.Errorf("Same: %v\nwant it to name %q", err, d)
				}
			}
		})
	}
}

func TestSameNamesAMissingFile(t *testing.T) {
	err := Same(filepath.Join(t.TempDir(), "nothing"), "also-nothing")
	if err == nil || !strings.Contains(err.Error(), "nothing") {
		t.Fatalf("Same of missing files: %v, want an error naming the file", err)
	}
}
