package admin

import (
	"crypto/subtle"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Key is one bearer key for the admin API, with the label the audit
// trail records for what it changed and the role that bounds what it may
// do.
type Key struct {
	Label string
	Role  Role
	key   []byte
}

// NewKey is the key secret, labelled label, with role r.
func NewKey(label string, secret []byte, r Role) Key { return Key{Label: label, Role: r, key: secret} }

// Role is what an admin key may do; each role may do all that the ones
// below it may.
type Role int

// The roles, from the least.
const (
	ReadOnly Role = iota + 1 // read rooms, settings, stats, audit, metrics
	Operator                 // and, in rooms that exist, pause, resume, set the message, preview, and events that do no more
	Admin                    // and everything else
)

var roleNames = map[Role]string{ReadOnly: "read-only", Operator: "operator", Admin: "admin"}

func (r Role) String() string { return roleNames[r] }

// ParseRole reads a role's name (admin, operator or read-only).
func ParseRole(s string) (Role, bool) {
	for r, n := range roleNames {
		if n == s {
			return r, true
		}
	}
	return 0, false
}

// Keys are the keys the admin API accepts: -admin-key (labelled
// "admin") and those of -admin-keys.
type Keys []Key

var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// LoadKeys reads the -admin-keys file: a YAML mapping of label to
// key, the key alone (role admin) or with a role,
//
//	alice: 9f2c…                 # at least 16 bytes each; role admin
//	desk:
//	  key: 41aa…
//	  role: operator             # admin | operator | read-only
//	wallboard: {key: 77e0…, role: read-only}
//
// A bad file is one error naming the line.
func LoadKeys(path string) (Keys, error) {
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
	var keys Keys
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch {
		case !labelRE.MatchString(k.Value):
			return nil, fail(k.Line, "label %q must match %s", k.Value, labelRE)
		case seen[k.Value]:
			return nil, fail(k.Line, "label %q appears twice", k.Value)
		}
		key, rl, err := keyEntry(k.Value, v)
		if err != nil {
			return nil, fail(err.line, "%s", err.msg)
		}
		for _, o := range keys {
			if string(o.key) == key.Value {
				return nil, fail(key.Line, "the key of %q is also the key of %q", k.Value, o.Label)
			}
		}
		seen[k.Value] = true
		keys = append(keys, Key{Label: k.Value, Role: rl, key: []byte(key.Value)})
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
func keyEntry(label string, v *yaml.Node) (*yaml.Node, Role, *keyError) {
	short := func(n *yaml.Node) *keyError {
		if n.Kind != yaml.ScalarNode || len(n.Value) < 16 {
			return &keyError{n.Line, fmt.Sprintf("the key of %q must be at least 16 bytes", label)}
		}
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return v, Admin, short(v)
	}
	var key *yaml.Node
	rl := Role(0)
	for j := 0; j+1 < len(v.Content); j += 2 {
		f, fv := v.Content[j], v.Content[j+1]
		switch f.Value {
		case "key":
			key = fv
		case "role":
			r, ok := ParseRole(fv.Value)
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

// Match returns the key that key is, comparing with every key in constant
// time so the time taken tells nothing about which one (or how much of one)
// matched.
func (ks Keys) Match(key []byte) (Key, bool) {
	var got Key
	found := false
	for _, k := range ks {
		if subtle.ConstantTimeCompare(key, k.key) == 1 && !found {
			got, found = k, true
		}
	}
	return got, found
}
