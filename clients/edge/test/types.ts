// Compiled with tsc --strict (npm run typecheck): the public API as a
// Worker and a Deno server use it.
import edge, { handle, decide, parseRoutes, type Env } from "@waitroom/edge";

const env: Env = { WAITROOM_URL: "https://waitroom.internal", WAITROOM_ROUTES: { routes: [{ match: "*/checkout/*", room: "drop" }] } };

export const worker = {
  async fetch(request: Request, env: Env): Promise<Response> {
    return handle(request, env, (r) => fetch(r));
  },
};

const d = decide(parseRoutes(env.WAITROOM_ROUTES), { host: "shop.example.com", target: "/checkout/pay" });
export const room: string = d.action === "guard" ? d.route.room : "";
export const same: typeof handle = edge.handle;

import { cloudfront, type CloudFrontRequestEvent } from "@waitroom/edge/cloudfront";

export async function viewerRequest(event: CloudFrontRequestEvent) {
  const out = await cloudfront(event, env);
  return "uri" in out ? out : { ...out, status: out.status };
}
