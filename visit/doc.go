// Package visit is the visitor-facing API of a waiting room: the join with
// its gates (join limits, proof of work, invite codes), the status poll
// with its next-ask hint and the memory that answers an early poll, leave,
// the push entry points and their connect tickets, the entry token's
// checks (the protected prefix, touch, verify) and its fail-open rule, the
// public draw and lottery records, and the waiting page with its
// languages and branding.
//
// It reaches the queue, the room settings, the signer, the push
// transports and the metrics only through the small interfaces it
// declares (Queue, Tokens, Records, Rooms, Visitors, EntryTokens,
// Challenges, Invites, Recovery, Push, ConnectTickets, Proxies, Metrics),
// so it is tested here against fakes; the server implements them with
// thin adapters and mounts the routes with API.Mount.
//
// Every refusal is a JSON error with a stable code (internal/httperr).
package visit
