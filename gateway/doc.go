// Package gateway is what lets waitroom stand in front of an unchanged
// app: the routes that say which requests a room protects and which skip
// the queue, the gateway session cookie (signed, sliding, not single use),
// the local cache of revoked sessions, the checks on a return URL, and,
// built on them, the gateway's one decision (Gateway), served as the
// forward-auth endpoints (Check, CheckEnd), the session endpoints (Enter,
// EndOwnSession) and the built-in reverse proxy (Front).
//
// The decision trusts what a request states about another request only
// from a trusted peer (Proxies), reads it in one forwarded-header shape
// at a time, refuses a host no route serves (421) and a path the app could
// read another way (400), and passes a session only with the visitor
// credential it was issued to. The proxy tunnels an upgrade only once the
// upstream has answered 101.
//
// It reaches the queue, the room settings and the server's API only
// through the small interfaces it declares (Store, Rooms, Visitors,
// Proxies, API, Metrics, Feed), so it is tested here against fakes; the
// server implements them with thin adapters.
package gateway
