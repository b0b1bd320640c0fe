// Command paramtable writes the parameter table of template.yaml into
// docs/deploy.md, between its parameters markers (`make docs-parameters`
// runs it). With -check it changes nothing and exits 1 if the page's table
// is not the template's.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/exactlyonce/transfers/internal/doccheck"
)

func main() {
	tpl := flag.String("template", "template.yaml", "the SAM template")
	page := flag.String("page", "docs/deploy.md", "the page that holds the table")
	check := flag.Bool("check", false, "only check that the page's table is the template's")
	flag.Parse()
	if err := run(*tpl, *page, *check); err != nil {
		fmt.Fprintln(os.Stderr, "paramtable:", err)
		os.Exit(1)
	}
}

func run(tpl, page string, check bool) error {
	table, err := doccheck.ParameterTable(tpl)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	updated, err := doccheck.Splice(string(old), table)
	if err != nil {
		return fmt.Errorf("%s: %w", page, err)
	}
	if updated == string(old) {
		return nil
	}
	if check {
		return fmt.Errorf("%s: the parameter table is not %s's: run make docs-parameters", page, tpl)
	}
	return os.WriteFile(page, []byte(updated), 0o644)
}
