// Package gateway holds what lets waitroom stand in front of an unchanged
// app: the routes that say which requests a room protects and which skip
// the queue, the gateway session cookie (signed, sliding, not single use),
// the local cache of revoked sessions, and the checks on a return URL.
//
// It knows nothing of HTTP servers or Redis: the server feeds it the
// original request's method, host, path, client address and headers, and
// the revocations it hears on pub/sub.
package gateway
