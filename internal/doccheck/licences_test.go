package doccheck

import (
	"os/exec"
	"testing"

	"github.com/exactlyonce/transfers/internal/licences"
)

// TestLicenceTable: CONTRIBUTING.md's licence tables are what the
// bootstraps link and the project builds with, each Go module with its
// line in internal/licences/licences.tsv (regenerate them with make
// docs-licences). It builds the six bootstraps with the Makefile's
// recipes, as internal/shipped does.
func TestLicenceTable(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH to run the Makefile's build recipes")
	}
	want, err := licences.Generate(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	page := read(t, "CONTRIBUTING.md")
	spliced, err := licences.Splice(page, want)
	if err != nil {
		t.Fatalf("CONTRIBUTING.md: %v", err)
	}
	if spliced != page {
		t.Errorf("CONTRIBUTING.md's licence tables are not what the bootstraps link and the project builds with: run make docs-licences")
	}
}
