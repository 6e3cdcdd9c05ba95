#!/usr/bin/python3
"""Check a waitroom entry token with PyJWT, offline, against the server's JWKS.

    verify.py JWKS_URL ISSUER ROOM TOKEN

Prints the claims and exits 0 for a token that is signed by a published key,
for ROOM, from ISSUER and inside nbf..exp; says why and exits 1 otherwise.
Offline is not once: spend the token with POST /api/v1/tokens/consume.
Needs Debian's python3-jwt and python3-cryptography.
"""
import json
import sys

import jwt

jwks_url, issuer, room, token = sys.argv[1:5]
try:
    key = jwt.PyJWKClient(jwks_url).get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token,
        key.key,
        algorithms=["EdDSA", "ES256"],
        audience=room,
        issuer=issuer,
        options={"require": ["exp", "nbf", "aud", "sub", "iss"]},
    )
except (jwt.PyJWTError, jwt.PyJWKClientError) as e:
    print("refused:", type(e).__name__, e, file=sys.stderr)
    sys.exit(1)
print(json.dumps(claims, separators=(",", ":")))
