package gateway

import (
	"errors"
	"strings"
)

// ErrAmbiguousPath is returned by NormalizePath for a request path that
// apps could read in more than one way. The gateway refuses such a request
// (400 invalid_path) rather than guess which way the app reads it.
var ErrAmbiguousPath = errors.New("ambiguous request path")

// NormalizePath returns the path of a request target (raw, as sent: maybe
// with a query or a fragment) the way an app that decodes it sees it, so
// routes and bypass rules match what the app will route:
//
//   - the query (from the first ?) and any fragment (from the first #) go;
//   - each segment is percent-decoded once, and loses its ;params (a
//     semicolon, sent as is or as %3B, and all after it to the segment's
//     end: servlet containers and some frameworks drop them);
//   - dot-segments (. and .., sent as is or encoded) are resolved;
//   - runs of slashes become one; a trailing slash stays.
//
// It fails with an error wrapping ErrAmbiguousPath for what apps disagree
// on or what only an attack sends: an invalid percent escape, an encoded
// slash (%2F: one segment for some apps, two for others), an encoded #
// (%23: what a gateway such as Caddy makes of a raw # it forwards as part
// of the path, which other hops read as a fragment), a backslash
// (raw or %5C: a slash to WHATWG URL parsers and Windows servers), a
// control byte or NUL (raw or encoded), a .. that climbs above the root,
// or a target that does not start with /.
//
// The result starts with / and holds no ;, no #, no backslash, no control byte,
// no empty and no dot segments; one without %, ? or # normalises to
// itself.
func NormalizePath(raw string) (string, error) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if raw == "" || raw[0] != '/' {
		return "", ambiguous("it does not start with /")
	}
	segs := make([]string, 0, strings.Count(raw, "/"))
	trailing := false
	for _, s := range strings.Split(raw[1:], "/") {
		seg, err := decodeSegment(s)
		if err != nil {
			return "", err
		}
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		switch seg {
		case "":
			// An empty segment (a doubled slash, or only ;params): merged,
			// but a path that ends in one keeps its trailing slash.
			trailing = true
			continue
		case ".":
			trailing = true
			continue
		case "..":
			if len(segs) == 0 {
				return "", ambiguous("a .. segment climbs above the root")
			}
			segs = segs[:len(segs)-1]
			trailing = true
			continue
		}
		segs = append(segs, seg)
		trailing = false
	}
	if len(segs) == 0 {
		return "/", nil
	}
	out := "/" + strings.Join(segs, "/")
	if trailing {
		out += "/"
	}
	return out, nil
}

// decodeSegment percent-decodes one segment (no slash in it).
func decodeSegment(s string) (string, error) {
	if !strings.ContainsAny(s, "%\\") && !hasControl(s) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", ambiguous("an invalid percent escape")
			}
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
			switch c {
			case '/':
				return "", ambiguous("an encoded slash (%2F)")
			case '#':
				return "", ambiguous("an encoded # (%23)")
			}
		}
		switch {
		case c == '\\':
			return "", ambiguous("a backslash")
		case c < 0x20 || c == 0x7f:
			return "", ambiguous("a control character or NUL")
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func ambiguous(why string) error {
	return &pathError{why: why}
}

type pathError struct{ why string }

func (e *pathError) Error() string { return ErrAmbiguousPath.Error() + ": " + e.why }
func (e *pathError) Unwrap() error { return ErrAmbiguousPath }
