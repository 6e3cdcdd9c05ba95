// CloudFront's Lambda@Edge (a viewer-request function on Node 20+): the
// connector on CloudFront's event shape. A pass goes on to the origin as
// CloudFront's own request with the connector's X-Waitroom-* headers (and
// without the client's); anything else is answered at the edge.
import { handle } from "./edge.mjs";

const GATEWAY_HEADERS = ["x-waitroom-room", "x-waitroom-visitor", "x-waitroom-fail-open"];

function setCookies(resp) {
  return typeof resp.headers.getSetCookie === "function" ? resp.headers.getSetCookie() : [];
}

/**
 * cloudfront answers a viewer-request event: the request to send on, or a
 * response. A viewer-request function does not see the origin's response,
 * so Waitroom-Session: end is not acted on here. When waitroom hands out
 * cookies on a pass (a fresh edge session, at most once a minute per
 * visitor), the visitor gets them with a 307 to the same address.
 */
export async function cloudfront(event, env) {
  const cf = event.Records[0].cf.request;
  const headers = new Headers();
  for (const list of Object.values(cf.headers || {})) {
    for (const { key, value } of list) headers.append(key, value);
  }
  const url = `https://${headers.get("host")}${cf.uri}${cf.querystring ? "?" + cf.querystring : ""}`;
  let passed = null;
  const resp = await handle(new Request(url, { method: cf.method, headers }), env, async (r) => {
    passed = r;
    return new Response(null, { status: 204 });
  }, { clientAddress: cf.clientIp });
  const cookies = setCookies(resp);
  if (passed && cookies.length === 0) {
    for (const k of Object.keys(cf.headers || {})) {
      if (GATEWAY_HEADERS.includes(k.toLowerCase().replace(/_/g, "-"))) delete cf.headers[k];
    }
    for (const k of GATEWAY_HEADERS) {
      const v = passed.headers.get(k);
      if (v !== null) cf.headers[k] = [{ key: k, value: v }];
    }
    return cf;
  }
  const out = { status: String(passed ? 307 : resp.status), headers: {} };
  if (passed) {
    out.headers.location = [{ key: "Location", value: url }];
    out.headers["cache-control"] = [{ key: "Cache-Control", value: "no-store" }];
  } else {
    for (const [k, v] of resp.headers) if (k !== "set-cookie") out.headers[k] = [{ key: k, value: v }];
    const body = await resp.text();
    if (body) out.body = body;
  }
  if (cookies.length) out.headers["set-cookie"] = cookies.map((value) => ({ key: "Set-Cookie", value }));
  return out;
}
