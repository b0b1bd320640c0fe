// Command licencetable rewrites CONTRIBUTING.md's licence tables
// (internal/licences): it builds each Lambda bootstrap with the
// Makefile's recipe, reads the modules linked into it, lists the other
// modules the project builds with and the npm packages of tools/, and
// gives each its licence from internal/licences/licences.tsv. `make
// docs-licences` runs it from the module root; internal/doccheck's
// TestLicenceTable fails when the tables are stale.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/exactlyonce/transfers/internal/licences"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "licencetable:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	const page = "CONTRIBUTING.md"
	section, err := licences.Generate(ctx, ".")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	out, err := licences.Splice(string(b), section)
	if err != nil {
		return fmt.Errorf("%s: %w", page, err)
	}
	return os.WriteFile(page, []byte(out), 0o644)
}
