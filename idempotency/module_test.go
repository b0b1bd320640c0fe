package idempotency

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// modulePath is this module's path.
const modulePath = "github.com/exactlyonce/transfers/idempotency"

// allowedModules prefix the modules the library may build with: the AWS
// SDK for Go v2 and its smithy runtime, and hashicorp/golang-lru (the
// cache of settled records).
var allowedModules = []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/hashicorp/golang-lru/v2"}

// TestBuildList: the module's build list (go list -m all) holds the AWS
// SDK's modules and golang-lru and nothing else, none of the application's in
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

func allowed(mod string) bool {
	for _, p := range allowedModules {
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
