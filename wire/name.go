package wire

import "errors"

// ErrInvalidRoom is returned for a room name that does not match the rules.
var ErrInvalidRoom = errors.New("invalid room name")

// The names' rules, as patterns: ^[a-z0-9][a-z0-9-]{0,63}$ for a room and
// ^[A-Za-z0-9_-]{1,64}$ for a visitor. ValidRoom and ValidVisitor check
// them without a regexp (a reconcile checks thousands of ids), and a test
// holds them to these patterns.

// ValidRoom reports whether name is a valid room name.
func ValidRoom(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidVisitor reports whether id is a valid visitor id (as issued by the
// server or supplied by a trusted backend).
func ValidVisitor(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
