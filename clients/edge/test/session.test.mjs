// verifySession on edge sessions signed here with WebCrypto in waitroom's
// format (entry.Session): what it takes and each thing it refuses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Keys, verifySession, credentialHash } from "../edge.mjs";

const enc = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");

async function keyPair(alg) {
  const params = alg === "EdDSA" ? { name: "Ed25519" } : { name: "ECDSA", namedCurve: "P-256" };
  const kp = await crypto.subtle.generateKey(params, true, ["sign", "verify"]);
  const jwk = await crypto.subtle.exportKey("jwk", kp.publicKey);
  return { kp, jwk: { ...jwk, kid: "k-" + alg, alg }, sign: (data) => crypto.subtle.sign(alg === "EdDSA" ? { name: "Ed25519" } : { name: "ECDSA", hash: "SHA-256" }, kp.privateKey, data) };
}

async function token(k, head, claims) {
  const signing = enc(head) + "." + enc(claims);
  const sig = Buffer.from(await k.sign(new TextEncoder().encode(signing))).toString("base64url");
  return signing + "." + sig;
}

test("verifySession takes a session of its room for its credential, and refuses the rest", async () => {
  const ed = await keyPair("EdDSA");
  const es = await keyPair("ES256");
  let fetches = 0;
  const keys = new Keys("http://jwks.invalid/", async () => {
    fetches++;
    return new Response(JSON.stringify({ keys: [ed.jwk, es.jwk] }), { headers: { "cache-control": "public, max-age=300" } });
  });
  const now = Date.now();
  const claims = { iss: "https://wr.example", aud: "waitroom:edge", sub: "v1", wr_room: "drop", nbf: Math.floor(now / 1000) - 5,
    wr_nbf_ms: now - 5000, exp: Math.floor(now / 1000) + 60, iat: Math.floor(now / 1000), wr_cred: await credentialHash("cred-1") };
  const opts = { keys, room: "drop", credential: "cred-1", iss: "https://wr.example", now };
  for (const k of [ed, es]) {
    const head = { alg: k.jwk.alg, kid: k.jwk.kid, typ: "wr-session+jwt" };
    assert.equal((await verifySession(await token(k, head, claims), opts))?.sub, "v1", k.jwk.alg);
    const refused = {
      "another credential": [head, claims, { credential: "cred-2" }],
      "another room": [head, claims, { room: "other" }],
      "another issuer": [head, claims, { iss: "https://other.example" }],
      "an entry token's typ": [{ ...head, typ: "JWT" }, claims, {}],
      "no typ": [{ alg: head.alg, kid: head.kid }, claims, {}],
      "a room's audience": [head, { ...claims, aud: "drop" }, {}],
      "expired": [head, { ...claims, exp: Math.floor(now / 1000) - 1 }, {}],
      "not valid yet": [head, { ...claims, wr_nbf_ms: now + 1000 }, {}],
      "exp as a string": [head, { ...claims, exp: String(claims.exp) }, {}],
      "an unknown key": [{ ...head, kid: "k-none" }, claims, {}],
      "the other algorithm for the key": [{ ...head, alg: head.alg === "EdDSA" ? "ES256" : "EdDSA" }, claims, {}],
      "alg none": [{ ...head, alg: "none" }, claims, {}],
      "crit": [{ ...head, crit: ["x"] }, claims, {}],
    };
    for (const [why, [h, c, o]] of Object.entries(refused)) {
      assert.equal(await verifySession(await token(k, h, c), { ...opts, ...o }), null, `${k.jwk.alg}: ${why}`);
    }
    // A signature of other claims.
    const good = await token(k, head, claims);
    const [h64, , s64] = good.split(".");
    assert.equal(await verifySession(`${h64}.${enc({ ...claims, sub: "v2" })}.${s64}`, opts), null, `${k.jwk.alg}: a forged payload`);
  }
  assert.equal(await verifySession("a.b", opts), null);
  assert.equal(await verifySession(undefined, opts), null);
  // The JWKS was fetched once for the known keys; an unknown kid fetches
  // again at most once a second.
  assert.ok(fetches <= 2, `${fetches} fetches`);
});
