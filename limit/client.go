package limit

import (
	"fmt"
	"net/netip"
	"strings"
)

// Proxies is a list of networks whose X-Forwarded-For is believed.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of CIDRs or single addresses.
func ParseProxies(s string) (Proxies, error) {
	var ps Proxies
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
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

// Contains reports whether a is in one of the networks.
func (ps Proxies) Contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Client returns the address of the client behind a request from peer
// with the X-Forwarded-For header xff: the peer itself unless it is a
// trusted proxy, else the nearest hop of X-Forwarded-For that is not a
// trusted proxy. The header is walked from the right, the end our own
// proxies append to, so a client cannot choose its address by sending an
// X-Forwarded-For of its own. When every hop is trusted, or a hop is not an
// address, the last trusted one answers for the request.
func (ps Proxies) Client(peer netip.Addr, xff string) netip.Addr {
	peer = peer.Unmap()
	if len(ps) == 0 || xff == "" || !ps.Contains(peer) {
		return peer
	}
	client := peer
	for xff != "" {
		var hop string
		if i := strings.LastIndexByte(xff, ','); i >= 0 {
			hop, xff = xff[i+1:], xff[:i]
		} else {
			hop, xff = xff, ""
		}
		a, err := netip.ParseAddr(strings.TrimSpace(hop))
		if err != nil {
			return client
		}
		client = a.Unmap()
		if !ps.Contains(client) {
			return client
		}
	}
	return client
}

// Key is the rate-limit key of a client address: the address itself for
// IPv4, the /64 for IPv6, since one subscriber usually holds a whole /64.
func Key(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
