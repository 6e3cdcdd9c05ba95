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

	"go.yaml.in/yaml/v3"
)

// Route maps requests to a room: a host and a path pattern, optionally
// only some methods.
type Route struct {
	Match   string   // "host/path-pattern" as written
	Host    string   // normalised (NormalizeHost), maybe with a port; "" matches any host, "*.example.com" any subdomain
	Path    string   // path pattern (see MatchPath), as written
	Room    string   // the room whose queue guards it
	Methods []string // upper case; empty = every method
	Cookie  string   // the room's session cookie (see NameCookies)

	cookieSet bool   // Cookie was written in the route, not derived
	folded    string // Path in lower case: routes match paths ignoring case
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
	// Hosts are served although no route names them (normalised, maybe
	// "*.example.com" or with a port): a request for one passes unless a
	// route (one for any host) matches it. See Serves.
	Hosts []string
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
	Hosts  yaml.Node   `yaml:"hosts"`
}

var (
	roomRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	cookieRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	hostRE   = regexp.MustCompile(`^((\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$`)
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
	if f.Hosts.Kind != 0 {
		var hosts []string
		if err := f.Hosts.Decode(&hosts); err != nil {
			return nil, fmt.Errorf("%s:%d: hosts: %v", name, f.Hosts.Line, err)
		}
		for _, h := range hosts {
			n := NormalizeHost(h)
			if n == "*" {
				cfg.Hosts = append(cfg.Hosts, "") // every host: no refusal
				continue
			}
			if !hostRE.MatchString(n) {
				return nil, fmt.Errorf("%s:%d: hosts: %q is not a host name or address", name, f.Hosts.Line, h)
			}
			cfg.Hosts = append(cfg.Hosts, n)
		}
	}
	if f.Bypass.Kind != 0 {
		var b fileBypass
		if err := decodeStrict(&f.Bypass, &b); err != nil {
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

// decodeStrict decodes n into v through a strict decoder, so a misspelt
// key (bypass: {path: …} for paths) is an error rather than a rule
// silently dropped. yaml.Node.Decode alone ignores unknown keys.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func parseRouteNode(n *yaml.Node) (Route, error) {
	if n.Kind != yaml.MappingNode {
		return Route{}, errors.New("a route is a mapping with match and room")
	}
	var fr fileRoute
	if err := decodeStrict(n, &fr); err != nil {
		return Route{}, err
	}
	host, p, ok := strings.Cut(fr.Match, "/")
	if fr.Match == "" || !ok {
		return Route{}, fmt.Errorf("match %q: want host/path, e.g. shop.example.com/checkout/* (or */checkout/* for any host)", fr.Match)
	}
	if host == "*" {
		host = ""
	}
	host = NormalizeHost(host)
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
	return Route{Match: fr.Match, Host: host, Path: "/" + p, Room: fr.Room, Methods: methods, Cookie: cookie,
		cookieSet: fr.Cookie != "", folded: strings.ToLower("/" + p)}, nil
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

// NormalizeHost returns a Host header (or a URL's authority) as hosts
// are compared: lower case, without the trailing dot of a fully qualified
// name ("Shop.Example.com.:443" is "shop.example.com:443"). The port, if
// any, stays: a route or hosts entry without one matches every port.
func NormalizeHost(host string) string {
	name, port := splitHost(strings.ToLower(strings.TrimSpace(host)))
	name = strings.TrimSuffix(name, ".")
	if port != "" {
		return name + ":" + port
	}
	return name
}

// splitHost cuts "name:port", "[v6]:port", "name" or "[v6]" into its
// name (brackets kept) and port ("" if none).
func splitHost(host string) (name, port string) {
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.Contains(host[i:], "]") {
		return host, ""
	}
	if !strings.HasPrefix(host, "[") && strings.Count(host, ":") > 1 {
		return host, "" // an unbracketed IPv6 address: no port
	}
	return host[:i], host[i+1:]
}

// matchHost reports whether host (normalised, maybe with a port) matches
// want (a route's or a hosts entry's host): a port in want must be
// host's; "*.example.com" matches its subdomains, not itself.
func matchHost(want, host string) bool {
	if want == "" {
		return true
	}
	wname, wport := splitHost(want)
	name, port := splitHost(host)
	if wport != "" && wport != port {
		return false
	}
	if sub, ok := strings.CutPrefix(wname, "*"); ok {
		return strings.HasSuffix(name, sub) && len(name) > len(sub)
	}
	return name == wname
}

// Route returns the first route that matches the request, or nil. host
// is the Host as sent (it is normalised here); p is the path as
// NormalizePath returns it. Path patterns match ignoring case: an app that
// routes /CHECKOUT/pay to its checkout is guarded too, and for one that
// does not, guarding a path it answers 404 on costs nothing.
func (c *Config) Route(method, host, p string) *Route {
	host = NormalizeHost(host)
	folded := strings.ToLower(p)
	for i := range c.Routes {
		r := &c.Routes[i]
		pat := r.folded
		if pat == "" {
			pat = strings.ToLower(r.Path)
		}
		if !matchHost(r.Host, host) || !MatchPath(pat, folded) {
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

// Bypassed reports whether a request skips the queue: its path (as
// NormalizePath returns it) matches a bypass pattern, its client address is
// in a bypass CIDR, or it carries the shared secret header (compared in
// constant time). Bypass patterns match case-sensitively, the opposite of
// routes: a pattern opens a door, so a spelling the operator did not write
// (/Checkout/STATIC/...) opens nothing.
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
	host = NormalizeHost(host)
	for _, r := range c.Routes {
		if r.Host != "" && matchHost(r.Host, host) {
			return true
		}
	}
	return false
}

// Serves reports whether the gateway answers for host (as sent): when no
// route names a host (every route is for any host) it serves every host;
// otherwise only hosts that a route or the hosts list names, compared
// normalised (NormalizeHost). A request for any other host is refused
// (421 unknown_host): the app behind may well answer it (a default
// virtual host, its IP address, "shop.example.com." with the dot) with the
// very pages a host route guards.
func (c *Config) Serves(host string) bool {
	named := false
	host = NormalizeHost(host)
	for _, r := range c.Routes {
		if r.Host == "" {
			continue
		}
		named = true
		if matchHost(r.Host, host) {
			return true
		}
	}
	if !named {
		return true
	}
	for _, h := range c.Hosts {
		if matchHost(h, host) {
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
