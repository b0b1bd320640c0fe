package spec

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"gopkg.in/yaml.v3"
)

// OverlayFile is the path of api/apigateway.yaml, API Gateway's merge
// patch over the public contract, in the source tree this package was
// built from.
func OverlayFile() string { return filepath.Join(filepath.Dir(SourceFile()), "apigateway.yaml") }

// GatewayFile is the path of api/openapi.gateway.json, the merged
// document template.yaml deploys (Merge of SourceFile and OverlayFile).
func GatewayFile() string { return filepath.Join(filepath.Dir(SourceFile()), "openapi.gateway.json") }

// Merge applies overlay, an RFC 7386 JSON merge patch written in YAML, to
// the public document (YAML or JSON) and returns the merged document as
// indented JSON: objects merge key by key, a null removes a key, any
// other value (arrays included) replaces the document's.
func Merge(public, overlay []byte) ([]byte, error) {
	doc, err := yamlToJSON(public)
	if err != nil {
		return nil, fmt.Errorf("spec: public document: %w", err)
	}
	patch, err := yamlToJSON(overlay)
	if err != nil {
		return nil, fmt.Errorf("spec: overlay: %w", err)
	}
	merged, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		return nil, fmt.Errorf("spec: merge: %w", err)
	}
	// MergePatch does not keep an order of keys: sorted, the file is
	// the same on every run.
	var v any
	if err := json.Unmarshal(merged, &v); err != nil {
		return nil, fmt.Errorf("spec: merge: %w", err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("spec: merge: %w", err)
	}
	return append(out, '\n'), nil
}

func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("not a mapping of string keys")
	}
	return json.Marshal(v)
}
