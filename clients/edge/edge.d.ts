// Types of @waitroom/edge's public API.

/** The connector's configuration, from the platform's environment (a Worker's vars and secrets). */
export interface Env {
  /** waitroom's address as the edge reaches it, e.g. https://waitroom.internal.example.com */
  WAITROOM_URL: string;
  /** The routes file in its JSON form (routes, bypass, hosts), as a string or parsed. */
  WAITROOM_ROUTES: string | object;
  /** The bypass header's secret, when the routes leave it out (a Worker secret). */
  WAITROOM_BYPASS_SECRET?: string;
  /** A service key (-service-keys): ends sessions on the origin's Waitroom-Session: end. */
  WAITROOM_SERVICE_KEY?: string;
  /** The fail mode of a room waitroom has not yet named (open or closed; default closed). */
  WAITROOM_FAIL_MODE?: "open" | "closed";
  /** The iss edge sessions must carry (waitroom's -issuer); empty: not checked. */
  WAITROOM_ISSUER?: string;
  /** The waiting page's prefix on the protected host (default /waitroom/). */
  WAITROOM_PAGE?: string;
  /** The visitor credential's cookie (default wr_visitor). */
  WAITROOM_VISITOR_COOKIE?: string;
  /** How long to wait for waitroom, in ms (default 2000). */
  WAITROOM_TIMEOUT_MS?: string | number;
}

/** What the platform knows of the client. */
export interface ClientInfo {
  /** The client's address (Deno's info.remoteAddr.hostname, Node's socket address). On Cloudflare, CF-Connecting-IP is read when this is absent. */
  clientAddress?: string;
}

/** The origin: forwards a request and returns its response. */
export type Next = (request: Request) => Promise<Response>;

/** The edge gateway: the Response for request, from the origin, waitroom, or a refusal. */
export function handle(request: Request, env: Env, next: Next, info?: ClientInfo): Promise<Response>;

/** A routes file, parsed and checked as gateway.Parse does. */
export interface Routes {
  routes: Array<{ host: string; path: string; room: string; methods: string[]; cookie: string }>;
  bypass: { paths: string[]; header: string };
  hosts: string[];
}

/** Reads a routes file in its JSON form; throws on what waitroom's start-up would refuse. */
export function parseRoutes(doc: string | object): Routes;

/** The decision on a request, before its session is looked at. */
export type Decision =
  | { action: "pass"; path?: string }
  | { action: "guard"; route: Routes["routes"][number]; path: string }
  | { action: "invalid_path" }
  | { action: "unknown_host" };

export function decide(
  routes: Routes,
  request: { method?: string; host: string; target: string; client?: string; header?: (name: string) => string },
): Decision;

/** gateway.NormalizePath; throws AmbiguousPathError. */
export function normalizePath(raw: string): string;
/** gateway.NormalizeHost. */
export function normalizeHost(host: string): string;
/** gateway.MatchPath. */
export function matchPath(pattern: string, path: string): boolean;

export class AmbiguousPathError extends Error {}

/** A JWKS cached for its Cache-Control max-age, fetched again on an unknown key id. */
export class Keys {
  constructor(url: string, fetcher?: (url: string) => Promise<Response>);
}

/** The claims of an edge session that holds. */
export interface SessionClaims {
  iss?: string;
  aud: string;
  sub: string;
  wr_room: string;
  nbf: number;
  wr_nbf_ms: number;
  exp: number;
  iat: number;
  wr_cred: string;
}

export function verifySession(
  token: string | undefined,
  opts: { keys: Keys; room: string; credential: string; iss?: string; now?: number },
): Promise<SessionClaims | null>;

/** entry.CredentialHash. */
export function credentialHash(credential: string): Promise<string>;

export const version: string;

declare const _default: { handle: typeof handle };
export default _default;
