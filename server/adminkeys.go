package main

import (
	"crypto/subtle"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.yaml.in/yaml/v3"
)

// adminKey is one bearer key for the admin API, with the label the audit
// trail records for what it changed and the role that bounds what it may
// do.
type adminKey struct {
	label string
	key   []byte
	role  role
}

// role is what an admin key may do; each role may do all that the ones
// below it may.
type role int

const (
	roleReadOnly role = iota + 1 // read rooms, settings, stats, audit, metrics
	roleOperator                 // and pause, resume, set the message (and preview those)
	roleAdmin                    // and everything else
)

var roleNames = map[role]string{roleReadOnly: "read-only", roleOperator: "operator", roleAdmin: "admin"}

func (r role) String() string { return roleNames[r] }

func parseRole(s string) (role, bool) {
	for r, n := range roleNames {
		if n == s {
			return r, true
		}
	}
	return 0, false
}

// adminKeys are the keys the admin API accepts: -admin-key (labelled
// "admin") and those of -admin-keys.
type adminKeys []adminKey

var adminLabelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// loadAdminKeys reads the -admin-keys file: a YAML mapping of label to
// key, the key alone (role admin) or with a role,
//
//	alice: 9f2c…                 # at least 16 bytes each; role admin
//	desk:
//	  key: 41aa…
//	  role: operator             # admin | operator | read-only
//	wallboard: {key: 77e0…, role: read-only}
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
		}
		key, rl, err := keyEntry(k.Value, v)
		if err != nil {
			return nil, fail(err.line, "%s", err.msg)
		}
		for _, o := range keys {
			if string(o.key) == key.Value {
				return nil, fail(key.Line, "the key of %q is also the key of %q", k.Value, o.label)
			}
		}
		seen[k.Value] = true
		keys = append(keys, adminKey{label: k.Value, key: []byte(key.Value), role: rl})
	}
	if len(keys) == 0 {
		return nil, fail(1, "no keys")
	}
	return keys, nil
}

type keyError struct {
	line int
	msg  string
}

// keyEntry reads one label's value: the key alone (role admin) or a
// mapping of key and role.
func keyEntry(label string, v *yaml.Node) (*yaml.Node, role, *keyError) {
	short := func(n *yaml.Node) *keyError {
		if n.Kind != yaml.ScalarNode || len(n.Value) < 16 {
			return &keyError{n.Line, fmt.Sprintf("the key of %q must be at least 16 bytes", label)}
		}
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return v, roleAdmin, short(v)
	}
	var key *yaml.Node
	rl := role(0)
	for j := 0; j+1 < len(v.Content); j += 2 {
		f, fv := v.Content[j], v.Content[j+1]
		switch f.Value {
		case "key":
			key = fv
		case "role":
			r, ok := parseRole(fv.Value)
			if fv.Kind != yaml.ScalarNode || !ok {
				return nil, 0, &keyError{fv.Line, fmt.Sprintf("the role of %q must be admin, operator or read-only, not %q", label, fv.Value)}
			}
			rl = r
		default:
			return nil, 0, &keyError{f.Line, fmt.Sprintf("%q of %q is not known (want key and role)", f.Value, label)}
		}
	}
	switch {
	case key == nil:
		return nil, 0, &keyError{v.Line, fmt.Sprintf("%q has no key", label)}
	case rl == 0:
		return nil, 0, &keyError{v.Line, fmt.Sprintf("%q has no role (admin, operator or read-only; or give the key alone for admin)", label)}
	}
	return key, rl, short(key)
}

// match returns the key that key is, comparing with every key in constant
// time so the time taken tells nothing about which one (or how much of one)
// matched.
func (ks adminKeys) match(key []byte) (adminKey, bool) {
	var got adminKey
	found := false
	for _, k := range ks {
		if subtle.ConstantTimeCompare(key, k.key) == 1 && !found {
			got, found = k, true
		}
	}
	return got, found
}

// adminLabel is the label of the key the request was let in with.
func adminLabel(c *fiber.Ctx) string {
	if l, ok := c.Locals("adminLabel").(string); ok {
		return l
	}
	return "admin"
}

// adminRole is the role of the key the request was let in with.
func adminRole(c *fiber.Ctx) role {
	if r, ok := c.Locals("adminRole").(role); ok {
		return r
	}
	return roleReadOnly
}
