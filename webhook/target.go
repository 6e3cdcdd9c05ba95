package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// ErrTargetNotAllowed is an attempt refused because the address its URL
// resolved to is internal (see Allowed). Every such refusal says the same,
// whatever is or is not listening there.
var ErrTargetNotAllowed = errors.New("target address not allowed")

// AllowList is the operator's list of networks a webhook may reach even
// though they are internal: receivers in the same data centre, or a test's
// loopback server. The admin API never sets it.
type AllowList []netip.Prefix

// ParseAllowList reads a comma-separated list of CIDRs or single
// addresses ("127.0.0.0/8,::1").
func ParseAllowList(s string) (AllowList, error) {
	var l AllowList
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		l = append(l, p.Masked())
	}
	return l, nil
}

func (l AllowList) contains(a netip.Addr) bool {
	for _, p := range l {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// internal are the networks a webhook may not reach unless the allow list
// has them, besides what netip calls loopback, private, link-local,
// multicast or unspecified.
var internal = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network": 0.0.0.0 reaches the host itself
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT, often a provider's internal network
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // network benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo and others)
	netip.MustParsePrefix("2002::/16"),       // 6to4: an IPv4 address inside
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("::ffff:0:0:0/96"), // SIIT: an IPv4 address inside
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Allowed reports whether a webhook may connect to a: an address outside
// every internal network (loopback, private, link-local with the cloud
// metadata address, unspecified, carrier-grade NAT, multicast, reserved
// ranges), or one the allow list has. An IPv4 address written as IPv6
// (::ffff:127.0.0.1) is judged as the IPv4 address; one behind the NAT64
// prefix by the IPv4 address it stands for.
func Allowed(a netip.Addr, allow AllowList) bool {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return false
	}
	if allow.contains(a) {
		return true
	}
	if nat64.Contains(a) {
		b := a.As16()
		return Allowed(netip.AddrFrom4([4]byte(b[12:])), allow)
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range internal {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// control refuses a connection to an address Allowed refuses. It runs at
// connect time, on the address the name resolved to, once per address
// tried, so a name that resolves inside (or starts to: DNS rebinding) is
// refused like a literal address, before any packet leaves.
func (l AllowList) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !Allowed(ap.Addr(), l) {
		return ErrTargetNotAllowed
	}
	return nil
}

// dialContext is net.Dialer.DialContext with the allow list's check of
// every address dialled.
func (l AllowList) dialContext() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Control: l.control}
	return d.DialContext
}

// literalAddr is the address a URL's host names without DNS, in any
// spelling a resolver accepts (127.1, 2130706433, 0x7f.1, [::ffff:7f00:1]);
// ok false for a name.
func literalAddr(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	// The forms inet_aton takes: one to four parts, each decimal, octal
	// (a leading 0) or hexadecimal (0x), the last filling the bytes left.
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		v, ok := aton(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var b [4]byte
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
	}
	last, rest := vals[len(vals)-1], 4-(len(vals)-1)
	if last >= 1<<(8*rest) {
		return netip.Addr{}, false
	}
	for i := 3; i >= len(vals)-1; i-- {
		b[i] = byte(last)
		last >>= 8
	}
	return netip.AddrFrom4(b), true
}

// aton reads one part of an inet_aton address: decimal, octal after a
// leading 0, hexadecimal after 0x.
func aton(p string) (uint64, bool) {
	base, digits := 10, p
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if digits == "" || strings.ContainsAny(digits, "_+-") {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, base, 32)
	return v, err == nil
}

// checkTarget refuses a URL whose host is an internal address written
// out (Allowed); a name is left to the check at connect time.
func checkTarget(raw string, allow AllowList) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // ValidURL says so
	}
	if a, ok := literalAddr(u.Hostname()); ok && !Allowed(a, allow) {
		return &InvalidError{"webhook_target_not_allowed", fmt.Sprintf("webhook url %q: %s is an internal address (loopback, private, link-local or reserved); only the operator's allow list (-webhook-allow-cidrs) lets a webhook reach one", raw, a)}
	}
	return nil
}
