package idempotency

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestEveryPublicNameHasAnExample: every exported function and type of
// every package under this folder, nested modules included, has a
// testable example: a function F has ExampleF, a type T has ExampleT,
// an example of one of its methods (ExampleT_M) or of a function that
// returns it (ExampleNewT). Methods, constants and variables need none
// of their own.
func TestEveryPublicNameHasAnExample(t *testing.T) {
	missing, err := missingExamples(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("%s has no testable example", m)
	}
}

// missingExamples lists "<dir>: <name>" for each exported function and
// type of the packages under root that no example covers.
func missingExamples(root string) ([]string, error) {
	var missing []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		m, err := missingIn(path)
		if err != nil {
			return err
		}
		missing = append(missing, m...)
		return nil
	})
	return missing, err
}

// missingIn is missingExamples for the package in dir.
func missingIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files, tests []*ast.File
	pkgName := ""
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(e.Name(), "_test.go") {
			tests = append(tests, f)
			continue
		}
		if f.Name.Name == "main" {
			return nil, nil
		}
		pkgName = f.Name.Name
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, nil
	}
	pkg, err := doc.NewFromFiles(fset, files, "example/"+pkgName)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, ex := range doc.Examples(tests...) {
		have[exampleSubject(ex.Name)] = true
	}
	var missing []string
	for _, f := range pkg.Funcs {
		if !have[f.Name] {
			missing = append(missing, dir+": "+f.Name)
		}
	}
	for _, typ := range pkg.Types {
		if !ast.IsExported(typ.Name) {
			continue
		}
		covered := have[typ.Name]
		for _, m := range typ.Methods {
			covered = covered || have[typ.Name+"_"+m.Name]
		}
		for _, f := range typ.Funcs {
			covered = covered || have[f.Name]
		}
		if !covered {
			missing = append(missing, dir+": "+typ.Name)
		}
		// A function that returns the type is a name of its own.
		for _, f := range typ.Funcs {
			if !have[f.Name] && !have[typ.Name] {
				missing = append(missing, dir+": "+f.Name)
			}
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing), nil
}

// exampleSubject is the name an example documents: "Store_Reserve" for
// ExampleStore_Reserve_require, "Do" for ExampleDo.
func exampleSubject(name string) string {
	parts := strings.Split(name, "_")
	n := len(parts)
	if n > 1 && parts[n-1] != "" && unicode.IsLower(rune(parts[n-1][0])) {
		n--
	}
	return strings.Join(parts[:n], "_")
}
