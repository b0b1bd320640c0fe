// Package buildcheck compares two Go binaries the way a reviewer would ask
// "is this the binary we tested?": the same Go version, main module,
// dependencies and build settings (what `go version -m` prints) and the
// same size. The size matters: under -trimpath, go records no -ldflags, so
// only the size tells a stripped binary (-s -w) from one with its symbols
// and debug information.
package buildcheck

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Same reports nil when the binaries at want and got have the same build
// information and size, or an error that lists every difference.
func Same(want, got string) error {
	a, err := read(want)
	if err != nil {
		return err
	}
	b, err := read(got)
	if err != nil {
		return err
	}
	diffs := Diff(a, b)
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%s and %s differ:\n  %s", want, got, strings.Join(diffs, "\n  "))
}

// Binary is what Same compares of one binary.
type Binary struct {
	Size int64
	// Lines are `go version -m`'s lines without the file name: go
	// version, path, mod, dep and build lines, in its order.
	Lines []string
}

// read reads the build information and the size of the binary at path.
func read(path string) (Binary, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Binary{}, fmt.Errorf("buildcheck: %w", err)
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("buildcheck: %s: %w", path, err)
	}
	lines := []string{"go\t" + bi.GoVersion}
	lines = append(lines, strings.Split(strings.TrimSpace(bi.String()), "\n")...)
	return Binary{Size: st.Size(), Lines: lines}, nil
}

// Diff lists the differences between want and got: each line only one of
// them has, then the sizes if they differ.
func Diff(want, got Binary) []string {
	var diffs []string
	for _, l := range want.Lines {
		if !slices.Contains(got.Lines, l) {
			diffs = append(diffs, "only in the first:  "+l)
		}
	}
	for _, l := range got.Lines {
		if !slices.Contains(want.Lines, l) {
			diffs = append(diffs, "only in the second: "+l)
		}
	}
	if want.Size != got.Size {
		diffs = append(diffs, fmt.Sprintf("size: %d bytes, %d bytes", want.Size, got.Size))
	}
	return diffs
}

// Describe is a one-line summary of a binary for a report: its size and
// its build settings.
func Describe(path string) (string, error) {
	b, err := read(path)
	if err != nil {
		return "", err
	}
	var settings []string
	for _, l := range b.Lines {
		if s, ok := strings.CutPrefix(l, "build\t"); ok {
			settings = append(settings, s)
		}
	}
	return fmt.Sprintf("%d bytes, %s", b.Size, strings.Join(settings, " ")), nil
}
