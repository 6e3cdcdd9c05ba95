// Package entry issues and checks waitroom entry tokens: compact JWS (JWT)
// signed with Ed25519 (EdDSA) or P-256 (ES256), with the public keys
// published as a JSON Web Key Set.
//
// A waitroom server signs a token for each admitted visitor with a KeySet.
// A protected service checks it with a Verifier, which fetches and caches
// the server's /.well-known/jwks.json, and may spend it exactly once
// through the server's consume endpoint with a Consumer. Middleware puts
// both in front of a net/http handler. A token is bound to the visitor it
// was issued to: it passes only with that visitor's credential, unless the
// service opts out (MiddlewareOptions.AllowMissingVisitor).
//
// The claims are the registered ones: iss (the server), aud (the room), sub
// (the visitor id), nbf, exp (the absolute cap of the token's life), iat
// and jti (one value per admission). Two private claims keep what whole
// seconds cannot: wr_nbf_ms, the exact moment the token becomes valid, and
// wr_idle_exp_ms, its idle expiry when it was signed. The idle expiry
// slides with use; only the server knows its current value, so an offline
// check is a check of the signature and the cap, and consume is the one
// that says "still live, not used".
package entry
