package main

import (
	"crypto/subtle"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gopkg.in/yaml.v3"
)

// adminKey is one bearer key for the admin API, with the label the audit
// trail records for what it changed.
type adminKey struct {
	label string
	key   []byte
}

// adminKeys are the keys the admin API accepts: -admin-key (labelled
// "admin") and those of -admin-keys.
type adminKeys []adminKey

var adminLabelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// loadAdminKeys reads the -admin-keys file: a YAML mapping of label to key,
//
//	alice: 9f2c…   # at least 16 bytes each
//	deploy-bot: 41aa…
//
// A bad file is one error naming the line.
func loadAdminKeys(path string) (adminKeys, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-admin-keys %s: %v", path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("-admin-keys %s: %v", path, err)
	}
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("-admin-keys %s:%d: %s", path, line, fmt.Sprintf(format, args...))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("-admin-keys %s: %s", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail(1, "want a mapping of label to key (alice: <key>)")
	}
	m := doc.Content[0]
	var keys adminKeys
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch {
		case !adminLabelRE.MatchString(k.Value):
			return nil, fail(k.Line, "label %q must match %s", k.Value, adminLabelRE)
		case seen[k.Value]:
			return nil, fail(k.Line, "label %q appears twice", k.Value)
		case v.Kind != yaml.ScalarNode || len(v.Value) < 16:
			return nil, fail(v.Line, "the key of %q must be at least 16 bytes", k.Value)
		}
		for _, o := range keys {
			if string(o.key) == v.Value {
				return nil, fail(v.Line, "the key of %q is also the key of %q", k.Value, o.label)
			}
		}
		seen[k.Value] = true
		keys = append(keys, adminKey{label: k.Value, key: []byte(v.Value)})
	}
	if len(keys) == 0 {
		return nil, fail(1, "no keys")
	}
	return keys, nil
}

// match returns the label of key, comparing with every key in constant
// time so the time taken tells nothing about which one (or how much of one)
// matched.
func (ks adminKeys) match(key []byte) (string, bool) {
	label, found := "", false
	for _, k := range ks {
		if subtle.ConstantTimeCompare(key, k.key) == 1 && !found {
			label, found = k.label, true
		}
	}
	return label, found
}

// adminLabel is the label of the key the request was let in with.
func adminLabel(c *fiber.Ctx) string {
	if l, ok := c.Locals("adminLabel").(string); ok {
		return l
	}
	return "admin"
}
