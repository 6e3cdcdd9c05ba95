package gateway

import (
	"errors"
	"net/url"
	"strings"
)

// ErrBadReturn is a return URL that would leave the protected sites.
var ErrBadReturn = errors.New("return URL must be on this host or a host in the routes")

// ReturnURL checks raw, where the waiting page sends the visitor once
// admitted: a path on this host ("/checkout?x=1"), or an absolute http(s)
// URL whose host is reqHost or a host named by a route. Anything else
// (another host, "//evil", a javascript: URL, credentials in the URL) is
// ErrBadReturn, so the page is no open redirect. It returns the URL to
// redirect to.
func (c *Config) ReturnURL(raw, reqHost string) (string, error) {
	if raw == "" || len(raw) > 4096 || strings.ContainsAny(raw, "\\\r\n\t") {
		return "", ErrBadReturn
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Opaque != "" {
		return "", ErrBadReturn
	}
	if u.Scheme == "" && u.Host == "" {
		if !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") {
			return "", ErrBadReturn
		}
		return u.RequestURI(), nil
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", ErrBadReturn
	}
	host := NormalizeHost(u.Host)
	if host != NormalizeHost(reqHost) && !c.KnownHost(host) {
		return "", ErrBadReturn
	}
	return u.String(), nil
}
