package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads the deployment's endpoints from a webhooks file: YAML (or
// JSON) with a list of {url, secret, events}, either at the top or under
// "webhooks". Each endpoint is checked with Validate; no URL twice.
func LoadFile(path string) ([]Endpoint, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhooks file: %w", err)
	}
	var eps []Endpoint
	if err := decodeKnown(raw, &eps); err != nil {
		var doc struct {
			Webhooks []Endpoint `yaml:"webhooks"`
		}
		if err2 := decodeKnown(raw, &doc); err2 != nil {
			return nil, fmt.Errorf("webhooks file %s: %w", path, err2)
		}
		eps = doc.Webhooks
	}
	seen := map[string]bool{}
	for i, e := range eps {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("webhooks file %s, webhook %d: %w", path, i+1, err)
		}
		if seen[e.URL] {
			return nil, fmt.Errorf("webhooks file %s, webhook %d: url %s is listed twice", path, i+1, e.URL)
		}
		seen[e.URL] = true
	}
	return eps, nil
}

// decodeKnown decodes raw into dst, refusing fields dst does not have (a
// misspelt "events" would otherwise subscribe to everything).
func decodeKnown(raw []byte, dst any) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
