// Command apispec writes api/openapi.gateway.json, the API definition
// template.yaml deploys: the public contract api/openapi.yaml with API
// Gateway's merge patch api/apigateway.yaml applied (internal/spec.Merge).
// Run it from the module root (make api).
package main

import (
	"fmt"
	"os"

	"github.com/exactlyonce/transfers/internal/spec"
)

const (
	public  = "api/openapi.yaml"
	overlay = "api/apigateway.yaml"
	merged  = "api/openapi.gateway.json"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "apispec:", err)
		os.Exit(1)
	}
}

func run() error {
	doc, err := os.ReadFile(public)
	if err != nil {
		return err
	}
	patch, err := os.ReadFile(overlay)
	if err != nil {
		return err
	}
	out, err := spec.Merge(doc, patch)
	if err != nil {
		return err
	}
	if _, err := spec.Load(out); err != nil {
		return fmt.Errorf("%s: %w", merged, err)
	}
	return os.WriteFile(merged, out, 0o644)
}
