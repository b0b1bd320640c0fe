package idempotency

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// modulePath is this module's path.
const modulePath = "github.com/exactlyonce/transfers/idempotency"

// allowedModules prefix the modules the library may build with: the
// compiledModules, then those that only go.mod files bring into the
// graph, none of whose packages the library compiles: testify with its
// go-spew, go-difflib and yaml.v3 (for the tests of go-jmespath and
// aws-lambda-go), and go-cmp, x/mod, x/tools and x/sys (x/exp's).
var allowedModules = append(slices.Clone(compiledModules),
	"github.com/stretchr/testify", "github.com/davecgh/go-spew", "github.com/pmezard/go-difflib", "gopkg.in/yaml.v3",
	"github.com/google/go-cmp", "golang.org/x/mod", "golang.org/x/tools", "golang.org/x/sys")

// compiledModules prefix the modules whose packages the library's
// packages (not their tests) may compile: the AWS SDK for Go v2 and its
// smithy runtime, golang-lru, jmespath-community/go-jmespath and
// golang.org/x/exp (only x/exp/constraints) for keypath, and
// aws-lambda-go (only its events package, which imports nothing outside
// the standard library) for apigateway and batch.
var compiledModules = []string{
	"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/hashicorp/golang-lru/v2",
	"github.com/jmespath-community/go-jmespath", "golang.org/x/exp", "github.com/aws/aws-lambda-go",
}

// TestBuildList: the module's build list (go list -m all) holds the
// allowedModules and nothing else, none of the application's in
// particular, so that a service requiring it downloads no more.
func TestBuildList(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-m", "-f", "{{.Path}}", "all").Output()
	if err != nil {
		var stderr []byte
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			stderr = exit.Stderr
		}
		t.Fatalf("go list -m all: %v\n%s", err, stderr)
	}
	mods := strings.Fields(string(out))
	if len(mods) == 0 || mods[0] != modulePath {
		t.Fatalf("go list -m all = %q, want %s first", mods, modulePath)
	}
	for _, m := range mods[1:] {
		if !allowed(m) {
			t.Errorf("the build list holds %s: the library requires only %v", m, allowedModules)
		}
	}
}

// TestCompiledModules: the packages of the library (go list -deps ./...,
// without tests) compile only compiledModules, so a program that uses it
// builds none of the modules that are in the build list for tests.
func TestCompiledModules(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./...").Output()
	if err != nil {
		var stderr []byte
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			stderr = exit.Stderr
		}
		t.Fatalf("go list -deps ./...: %v\n%s", err, stderr)
	}
	for _, m := range strings.Fields(string(out)) {
		if m != modulePath && !within(m, compiledModules) {
			t.Errorf("the library's packages compile %s: they may compile only %v", m, compiledModules)
		}
	}
}

func allowed(mod string) bool { return within(mod, allowedModules) }

func within(mod string, prefixes []string) bool {
	for _, p := range prefixes {
		if mod == p || strings.HasPrefix(mod, p+"/") {
			return true
		}
	}
	return false
}

func TestAllowed(t *testing.T) {
	for mod, want := range map[string]bool{
		"github.com/aws/aws-sdk-go-v2":                  true,
		"github.com/aws/aws-sdk-go-v2/service/dynamodb": true,
		"github.com/aws/smithy-go":                      true,
		"github.com/hashicorp/golang-lru/v2":            true,
		"github.com/jmespath-community/go-jmespath":     true,
		"golang.org/x/exp":                              true,
		"golang.org/x/expx":                             false,
		"github.com/aws/aws-lambda-go":                  true,
		"github.com/aws/aws-sdk-go-v2x":                 false,
		"github.com/exactlyonce/transfers":              false,
		"gonum.org/v1/plot":                             false,
		"go.opentelemetry.io/otel":                      false,
	} {
		if got := allowed(mod); got != want {
			t.Errorf("allowed(%q) = %v, want %v", mod, got, want)
		}
	}
}
