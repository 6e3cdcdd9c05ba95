// Types of @waitroom/client: the browser client of a waitroom server.
// The behaviour behind each is described at the top of waitroom.js.

/** Where a visitor stands in a room. */
export type Status = "waiting" | "admitted" | "expired" | "not_in_queue" | "sold_out" | "closed";

/** A transport the client can use, in the order it tries them by default. */
export type Transport = "ws" | "sse" | "poll";

/** The server's state message: the body of a join or poll answer and of every push. */
export interface State {
  type: "state";
  room: string;
  status: Status;
  /** 1-based place in the queue (waiting, not in a lottery room). */
  position?: number;
  /** Estimated wait in whole seconds. */
  etaSeconds?: number;
  /**
   * The span the wait likely falls in, in seconds: around etaSeconds for a
   * place (the measured rate ± its spread), the 25th to 75th percentile of
   * the wait in a lottery room.
   */
  etaRange?: { low: number; high: number };
  /** The measured admission rate the estimate is made from. */
  ratePerSecond?: number;
  /** When a polling client should ask next, in milliseconds. */
  nextPollMs?: number;
  /** The room is paused: the place is kept, nobody is admitted. */
  paused?: boolean;
  /** The server cannot reach its store: positions stand still, the place is kept. */
  degraded?: boolean;
  /** Admitted: the entry token (a JWT) for the protected API. */
  token?: string;
  /** Admitted: the token may be used from this time (RFC 3339). */
  notBefore?: string;
  /** Admitted: the token's expiry (RFC 3339). */
  expiresAt?: string;
  /** Pre-queue: when the room opens (RFC 3339). */
  opensAt?: string;
  /** Lottery rooms: how many people are in the draw. */
  inDraw?: number;
  /** Lottery rooms: the chance (0..1) of being drawn within a minute. */
  chancePerMinute?: number;
  /** The operator's message, plain text; show it as text, never as HTML. */
  message?: string;
  /** Why an expired place is gone when not the token's age, e.g. "away". */
  reason?: string;
  /**
   * Rooms with activation busy: whether the room is queueing (anyone
   * waits) or letting visitors straight through, and since when (RFC 3339).
   */
  activation?: { state: "queueing" | "passing"; since: string };
}

/** A problem the client is retrying, or that stopped it. */
export interface Problem {
  /** The server's stable error code, "network", or "http_<status>". */
  code: string;
  message: string;
  /** The HTTP status, 0 when there was no answer. */
  status: number;
}

/** What the client knows beside the last state. */
export interface Info {
  transport: Transport | null;
  /** Admitted only: milliseconds until the entry token may be used. */
  validInMs: number;
  /** status is "admitted" and validInMs is 0. */
  usable: boolean;
  /** The position when this ticket was first seen, for a progress bar. */
  startPosition: number;
  degraded: boolean;
  /** This visitor holds as many live connections as the server allows: this tab polls. */
  otherTab: boolean;
  error: Problem | null;
  /** When error is set and a retry is scheduled: the wait in milliseconds. */
  retryInMs: number;
  /** The client gave up (e.g. an invalid room name). */
  fatal: boolean;
  /** The operator's message to everyone waiting, plain text ("" = none). */
  message: string;
  /** The client is solving the room's proof of work before it may join. */
  solving: boolean;
}

/** Options of connect. */
export interface ConnectOptions {
  /** The room to join. */
  room: string;
  /** The waitroom server's origin; default: this page's origin. */
  base?: string;
  /** Transports to try, in order; default ["ws", "sse", "poll"]. */
  transports?: Transport[];
  /**
   * Where the visitor credential is kept: "auto" (localStorage on the
   * waitroom's own origin, else memory and its HttpOnly cookie), "local"
   * (always localStorage) or "none" (memory and the cookie).
   */
  remember?: "auto" | "local" | "none";
  /** An invite or priority code sent with the join. */
  invite?: string;
  /** Called for every state message and whenever info changes. */
  onState?: (state: State | null, info: Info) => void;
  /** Called when a transport goes live. */
  onTransport?: (name: Transport) => void;
}

/** The handle connect returns. */
export interface Connection {
  /** The last state, or null before the first one. */
  state(): State | null;
  info(): Info;
  /** The visitor credential: send it as X-Visitor to the protected API with the token. */
  visitor(): string;
  /** Close the connection and cancel timers. */
  close(): void;
  /** Give the place (or the entry token) back, then close. Rejects with a Problem. */
  leave(): Promise<void>;
  /** Take a new ticket (after "expired" or "not_in_queue"). */
  rejoin(): void;
}

/** Joins the room at once and keeps the visitor's state current. */
export function connect(options: ConnectOptions): Connection;

/** Resolves to the nonce that solves a proof of work challenge of bits zero bits. */
export function solvePow(challenge: string, bits: number): Promise<string>;

/** The position a waiting state stands for elapsedMs after it arrived. */
export function shown(state: State | null, elapsedMs: number): number;

/** The version of the client's protocol with the server. */
export const version: string;

/** All of the above, as the classic script's window.Waitroom. */
export declare const Waitroom: {
  connect: typeof connect;
  solvePow: typeof solvePow;
  shown: typeof shown;
  version: string;
};
export default Waitroom;
