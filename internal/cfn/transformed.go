package cfn

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrStale reports a transformed template older than a file it was made
// from.
var ErrStale = errors.New("cfn: the transformed template is stale")

// TransformedPath is where the SAM-transformed form of the template at
// samPath is kept: template.yaml's is template.cfn.json beside it
// (make cfn writes it).
func TransformedPath(samPath string) string {
	ext := filepath.Ext(samPath)
	return strings.TrimSuffix(samPath, ext) + ".cfn.json"
}

// LoadTransformed loads a template written by the SAM transform
// (tools/sam/transform.py) after checking that each file it was made from,
// listed with its SHA-256 under Metadata.TransformedFrom, is unchanged: a
// stale one would describe another stack (ErrStale, naming the file).
func LoadTransformed(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cfn: %w (make cfn writes it)", err)
	}
	var doc struct {
		Metadata struct {
			TransformedFrom map[string]string
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("cfn: %s: %w", path, err)
	}
	from := doc.Metadata.TransformedFrom
	if len(from) == 0 {
		return nil, fmt.Errorf("cfn: %s has no Metadata.TransformedFrom: it was not written by make cfn", path)
	}
	dir := filepath.Dir(path)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range from {
			if !yield(k) {
				return
			}
		}
	}) {
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%w: %s was made from %s: %v", ErrStale, path, name, err)
		}
		sum := sha256.Sum256(src)
		if hex.EncodeToString(sum[:]) != from[name] {
			return nil, fmt.Errorf("%w: %s changed since %s was made: run make cfn", ErrStale, name, filepath.Base(path))
		}
	}
	return Parse(path, data)
}
