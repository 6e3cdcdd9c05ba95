// Check a waitroom entry token with jose, offline, against the server's JWKS.
//
//   node verify.mjs JWKS_URL ISSUER ROOM TOKEN
//
// Prints the claims and exits 0 for a token that is signed by a published
// key, for ROOM, from ISSUER and inside nbf..exp; says why and exits 1
// otherwise. Offline is not once: spend the token with
// POST /api/v1/tokens/consume.
import { createRemoteJWKSet, jwtVerify } from 'jose';

const [jwksURL, issuer, room, token] = process.argv.slice(2);
const jwks = createRemoteJWKSet(new URL(jwksURL));
try {
  const { payload } = await jwtVerify(token, jwks, {
    issuer,
    audience: room,
    algorithms: ['EdDSA', 'ES256'],
    requiredClaims: ['exp', 'nbf', 'sub'],
  });
  console.log(JSON.stringify(payload));
} catch (e) {
  console.error('refused:', e.code || e.name, e.message);
  process.exit(1);
}
