// Package webhook tells other systems what happens to rooms: signed HTTP
// callbacks in the Standard Webhooks format (https://www.standardwebhooks.com),
// delivered at least once from an outbox in Redis.
//
// Endpoints come from two places: the deployment's webhooks file (every
// room's events) and each room's own list, kept in Redis and changed through
// the admin API. Emit writes one delivery per endpoint that wants the event
// into the outbox, a queue per endpoint of at most Options.MaxPending (the
// oldest dropped past it); it never waits for a receiver. Run, on every
// instance, claims due deliveries with a lease, endpoint after endpoint and
// no more than a few per endpoint and per room, so exactly one instance
// makes each attempt, a receiver that hangs holds up no other, and a
// delivery whose instance died is taken by another once its lease has run
// out. A failed attempt is tried again after a growing delay; after the
// last one the delivery goes to the dead-letter list, from which an
// operator can send it again. No attempt connects to an internal address
// the operator's allow list does not have (Allowed).
package webhook
