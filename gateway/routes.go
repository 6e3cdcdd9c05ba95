package gateway

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Route maps requests to a room: a host and a path pattern, optionally
// only some methods.
type Route struct {
	Match   string   // "host/path-pattern" as written
	Host    string   // lower case, no port; "" matches any host, "*.example.com" any subdomain
	Path    string   // path pattern (see MatchPath)
	Room    string   // the room whose queue guards it
	Methods []string // upper case; empty = every method
	Cookie  string   // the room's session cookie (see NameCookies)

	cookieSet bool // Cookie was written in the route, not derived
}

// Bypass rules let a request skip the queue.
type Bypass struct {
	Paths        []string
	CIDRs        []netip.Prefix
	Header       string // header name carrying the shared secret; "" = off
	HeaderSecret string
}

// Config is a parsed routes file plus any inline routes.
type Config struct {
	Routes []Route
	Bypass Bypass
}

type fileRoute struct {
	Match   string   `yaml:"match"`
	Room    string   `yaml:"room"`
	Methods []string `yaml:"methods"`
	Cookie  string   `yaml:"cookie"`
}

type fileBypass struct {
	Paths  []string `yaml:"paths"`
	CIDRs  []string `yaml:"cidrs"`
	Header *struct {
		Name   string `yaml:"name"`
		Secret string `yaml:"secret"`
	} `yaml:"header"`
}

type file struct {
	Routes []yaml.Node `yaml:"routes"`
	Bypass yaml.Node   `yaml:"bypass"`
}

var (
	roomRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	cookieRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	hostRE   = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$`)
	methodRE = regexp.MustCompile(`^[A-Z]{1,16}$`)
)

// Parse reads a routes file (YAML, or JSON, which is YAML too). name is
// used in errors, which carry the line of the offending entry.
func Parse(name string, data []byte) (*Config, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	cfg := &Config{}
	for i := range f.Routes {
		r, err := parseRouteNode(&f.Routes[i])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, f.Routes[i].Line, err)
		}
		cfg.Routes = append(cfg.Routes, r)
	}
	if i, err := cfg.nameCookies(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, f.Routes[i].Line, err)
	}
	if f.Bypass.Kind != 0 {
		var b fileBypass
		if err := f.Bypass.Decode(&b); err != nil {
			return nil, fmt.Errorf("%s:%d: bypass: %v", name, f.Bypass.Line, err)
		}
		if err := cfg.Bypass.set(b); err != nil {
			return nil, fmt.Errorf("%s:%d: bypass: %v", name, f.Bypass.Line, err)
		}
	}
	return cfg, nil
}

// ParseRoute reads one inline route in the file's syntax, as a YAML flow
// mapping: {match: shop.example.com/checkout/*, room: drop, methods: [POST]}.
func ParseRoute(s string) (Route, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		return Route{}, fmt.Errorf("route %q: %v", s, err)
	}
	if len(n.Content) != 1 {
		return Route{}, fmt.Errorf("route %q: want one mapping such as {match: host/path/*, room: name}", s)
	}
	r, err := parseRouteNode(n.Content[0])
	if err != nil {
		return Route{}, fmt.Errorf("route %q: %v", s, err)
	}
	return r, nil
}

func parseRouteNode(n *yaml.Node) (Route, error) {
	if n.Kind != yaml.MappingNode {
		return Route{}, errors.New("a route is a mapping with match and room")
	}
	var fr fileRoute
	// Decode through a strict decoder so a misspelt key is an error.
	b, err := yaml.Marshal(n)
	if err != nil {
		return Route{}, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&fr); err != nil {
		return Route{}, err
	}
	host, p, ok := strings.Cut(fr.Match, "/")
	if fr.Match == "" || !ok {
		return Route{}, fmt.Errorf("match %q: want host/path, e.g. shop.example.com/checkout/* (or */checkout/* for any host)", fr.Match)
	}
	host = strings.ToLower(host)
	if host == "*" {
		host = ""
	}
	if host != "" && !hostRE.MatchString(host) {
		return Route{}, fmt.Errorf("match %q: invalid host", fr.Match)
	}
	if err := checkPattern("/" + p); err != nil {
		return Route{}, fmt.Errorf("match %q: %v", fr.Match, err)
	}
	if !roomRE.MatchString(fr.Room) {
		return Route{}, fmt.Errorf("room %q: names match ^[a-z0-9][a-z0-9-]{0,63}$", fr.Room)
	}
	cookie := fr.Cookie
	if cookie == "" {
		cookie = SessionCookie(fr.Room)
	} else if !cookieRE.MatchString(cookie) {
		return Route{}, fmt.Errorf("cookie %q: letters, digits, _ and - only", cookie)
	}
	var methods []string
	for _, m := range fr.Methods {
		m = strings.ToUpper(strings.TrimSpace(m))
		if !methodRE.MatchString(m) {
			return Route{}, fmt.Errorf("method %q is not an HTTP method", m)
		}
		methods = append(methods, m)
	}
	return Route{Match: fr.Match, Host: host, Path: "/" + p, Room: fr.Room, Methods: methods, Cookie: cookie, cookieSet: fr.Cookie != ""}, nil
}

func (b *Bypass) set(f fileBypass) error {
	for _, p := range f.Paths {
		if err := checkPattern(p); err != nil {
			return fmt.Errorf("path %q: %v", p, err)
		}
		b.Paths = append(b.Paths, p)
	}
	for _, c := range f.CIDRs {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			a, aerr := netip.ParseAddr(strings.TrimSpace(c))
			if aerr != nil {
				return fmt.Errorf("cidr %q: %v", c, err)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		b.CIDRs = append(b.CIDRs, pfx.Masked())
	}
	if h := f.Header; h != nil {
		if h.Name == "" || http.CanonicalHeaderKey(h.Name) == "" {
			return errors.New("header: name is required")
		}
		if len(h.Secret) < 16 {
			return errors.New("header: secret must be at least 16 bytes")
		}
		b.Header, b.HeaderSecret = h.Name, h.Secret
	}
	return nil
}

// checkPattern accepts "/path", "/prefix/*" (the prefix and everything
// below it), "/dir/*.css" (one segment glob, as path.Match) and "*.ext" (a
// suffix anywhere).
func checkPattern(p string) error {
	if strings.HasPrefix(p, "*.") {
		if strings.ContainsAny(p[1:], "*?[/") {
			return errors.New("a suffix pattern is *.ext")
		}
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return errors.New("a path pattern starts with / (or is *.ext)")
	}
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*")
	}
	if _, err := path.Match(p, "/"); err != nil {
		return fmt.Errorf("bad pattern: %v", err)
	}
	return nil
}

// MatchPath reports whether path p (no query) matches pattern.
func MatchPath(pattern, p string) bool {
	if strings.HasPrefix(pattern, "*.") {
		return strings.HasSuffix(p, pattern[1:])
	}
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		if !strings.ContainsAny(prefix, "*?[") {
			return p == prefix || strings.HasPrefix(p, prefix+"/")
		}
		// A glob prefix: match it against the same number of segments.
		n := strings.Count(prefix, "/")
		segs := strings.SplitAfterN(p, "/", n+2)
		if len(segs) < n+1 {
			return false
		}
		head := strings.TrimSuffix(strings.Join(segs[:n+1], ""), "/")
		ok, _ := path.Match(prefix, head)
		return ok
	}
	if !strings.ContainsAny(pattern, "*?[") {
		return p == pattern
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

// matchHost reports whether host (lower case, maybe with a port) matches
// the route's host.
func matchHost(want, host string) bool {
	if want == "" {
		return true
	}
	if !strings.Contains(want, ":") {
		host = stripPort(host)
	}
	if sub, ok := strings.CutPrefix(want, "*"); ok {
		return strings.HasSuffix(host, sub) && len(host) > len(sub)
	}
	return host == want
}

func stripPort(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		return host[:i]
	}
	return host
}

// Route returns the first route that matches the request, or nil.
func (c *Config) Route(method, host, p string) *Route {
	host = strings.ToLower(host)
	for i := range c.Routes {
		r := &c.Routes[i]
		if !matchHost(r.Host, host) || !MatchPath(r.Path, p) {
			continue
		}
		if len(r.Methods) > 0 && !hasMethod(r.Methods, method) {
			continue
		}
		return r
	}
	return nil
}

func hasMethod(ms []string, m string) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// Bypassed reports whether a request skips the queue: its path matches a
// bypass pattern, its client address is in a bypass CIDR, or it carries the
// shared secret header (compared in constant time).
func (c *Config) Bypassed(p string, client netip.Addr, header func(string) string) bool {
	for _, pat := range c.Bypass.Paths {
		if MatchPath(pat, p) {
			return true
		}
	}
	if client.IsValid() {
		client = client.Unmap()
		for _, pfx := range c.Bypass.CIDRs {
			if pfx.Contains(client) {
				return true
			}
		}
	}
	if c.Bypass.Header != "" {
		if v := header(c.Bypass.Header); v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(c.Bypass.HeaderSecret)) == 1 {
			return true
		}
	}
	return false
}

// KnownHost reports whether host (maybe with a port) is named by a route:
// a return URL may lead there.
func (c *Config) KnownHost(host string) bool {
	host = strings.ToLower(host)
	for _, r := range c.Routes {
		if r.Host != "" && matchHost(r.Host, host) {
			return true
		}
	}
	return false
}

// Room returns a route of room, for its cookie name; nil if none.
func (c *Config) Room(room string) *Route {
	for i := range c.Routes {
		if c.Routes[i].Room == room {
			return &c.Routes[i]
		}
	}
	return nil
}
