package licences

import (
	"strings"
	"testing"
)

func TestMapping(t *testing.T) {
	m, err := Mapping()
	if err != nil {
		t.Fatal(err)
	}
	if m["github.com/google/uuid"].SPDX != "BSD-3-Clause" {
		t.Errorf("uuid: %+v", m["github.com/google/uuid"])
	}
}

func TestTablesRefuseUnknownAndUnusedModules(t *testing.T) {
	m, err := Mapping()
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for mod := range m {
		all = append(all, mod)
	}
	shipped := map[string][]string{"github.com/google/uuid": {"a", "b"}}
	if _, err := Tables(shipped, all, nil, 2); err != nil {
		t.Fatalf("every module mapped and used: %v", err)
	}
	if _, err := Tables(shipped, append(all, "example.com/unknown"), nil, 2); err == nil || !strings.Contains(err.Error(), "example.com/unknown") {
		t.Errorf("an unmapped module: %v", err)
	}
	if _, err := Tables(shipped, all[1:], nil, 2); err == nil && all[0] != "github.com/google/uuid" {
		t.Errorf("a mapped module nothing uses (%s): no error", all[0])
	}
}

// TestOwnModules: the project's own modules, which the bootstraps link
// through a replace, are left out of the tables; a module whose path only
// begins like the project's is not.
func TestOwnModules(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/exactlyonce/transfers/idempotency": true,
		"github.com/exactlyonce/transfers/client":      true,
		"github.com/exactlyonce/transfersx":            false,
		"github.com/exactlyonce/other":                 false,
		"github.com/aws/aws-sdk-go-v2":                 false,
	} {
		if got := own(path); got != want {
			t.Errorf("own(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestSplice(t *testing.T) {
	page := "a\n" + BeginMarker + "\nold\n" + EndMarker + "\nb\n"
	got, err := Splice(page, "new\n")
	if err != nil || got != "a\n"+BeginMarker+"\nnew\n"+EndMarker+"\nb\n" {
		t.Errorf("Splice = %q, %v", got, err)
	}
	if _, err := Splice("no markers", "x"); err == nil {
		t.Error("Splice without markers: no error")
	}
}
