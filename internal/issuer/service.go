package issuer

import (
	"crypto/subtle"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
)

// serviceLabelRE is what a service key's label may be (as an admin key's).
var serviceLabelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// serviceKey is one key of -service-keys.
type serviceKey struct {
	label string
	key   []byte
}

// ServiceKeys are the labelled keys of the protected services, which may
// spend entry tokens.
type ServiceKeys []serviceKey

// LoadServiceKeys reads the -service-keys file, a YAML mapping of label to
// key (at least 16 bytes, each key once), which only its owner may read
// (ReadKeyFile). A key isAdmin names is refused: the kinds are kept apart.
// An empty path is no keys.
func LoadServiceKeys(path string, isAdmin func(key []byte) bool) (ServiceKeys, error) {
	if path == "" {
		return nil, nil
	}
	data, err := ReadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("-service-keys %v", err)
	}
	var m map[string]string
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("-service-keys %s: want a mapping of label to key: %s", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	var out ServiceKeys
	seen := map[string]string{}
	for label, key := range m {
		switch {
		case !serviceLabelRE.MatchString(label):
			return nil, fmt.Errorf("-service-keys %s: label %q must match %s", path, label, serviceLabelRE)
		case len(key) < 16:
			return nil, fmt.Errorf("-service-keys %s: the key of %q must be at least 16 bytes", path, label)
		case seen[key] != "":
			return nil, fmt.Errorf("-service-keys %s: the key of %q is also the key of %q", path, label, seen[key])
		case isAdmin([]byte(key)):
			return nil, fmt.Errorf("-service-keys %s: the key of %q is an admin key; give services keys of their own", path, label)
		}
		seen[key] = label
		out = append(out, serviceKey{label: label, key: []byte(key)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-service-keys %s: no keys", path)
	}
	return out, nil
}

// ServiceKey returns the label of key, compared in constant time with
// each service key.
func (ks ServiceKeys) ServiceKey(key string) (string, bool) {
	b := []byte(key)
	label := ""
	for _, k := range ks {
		if subtle.ConstantTimeCompare(k.key, b) == 1 {
			label = k.label
		}
	}
	return label, label != ""
}

// Services are the service keys in force: those of the -service-keys file
// as last read, replaced by Reload, so that a key removed from the file
// (a leaked one) stops working without a restart. Safe for concurrent use.
type Services struct {
	path    string
	isAdmin func(key []byte) bool
	keys    atomic.Pointer[ServiceKeys]
}

// NewServices returns the service keys of the file at path (none when
// empty), not read until Reload. isAdmin is asked at each read.
func NewServices(path string, isAdmin func(key []byte) bool) *Services {
	s := &Services{path: path, isAdmin: isAdmin}
	s.keys.Store(new(ServiceKeys))
	return s
}

// Reload reads the file again; on success its keys replace those in
// force, and it returns their number. A file refused (missing, not only
// its owner's, malformed, no keys, an admin key) leaves the keys in force
// and is the error.
func (s *Services) Reload() (int, error) {
	keys, err := LoadServiceKeys(s.path, s.isAdmin)
	if err != nil {
		return 0, err
	}
	s.keys.Store(&keys)
	return len(keys), nil
}

// ServiceKey returns the label of key among the keys in force.
func (s *Services) ServiceKey(key string) (string, bool) { return s.keys.Load().ServiceKey(key) }
