// Package autopilot sizes a room's admission rate from the measured
// health of the system the room protects (the origin): its latency and
// its errors, instead of a number the operator guesses.
//
// Samples (one per origin request: how long it took, whether it failed)
// come from the built-in proxy, the entry middleware and the health
// endpoint; a Store adds them up per room per second in Redis, in keys
// that expire, so every instance sees the same counts. Once a second one
// instance per room (whichever takes the second first, in a script, as
// the tick loop takes a tick) reads the last window, and the Controller,
// which is pure, decides the room's rate: a cut on errors or on a p95
// over the target, a cautious rise while visitors wait and the latency
// stays near the best seen, a hold without samples. A Pilot runs that
// loop and writes the rate into the room's own settings (the batch per
// tick, or maxActive), so nothing else changes hands and turning the
// autopilot off leaves the last rate in place. docs/autopilot.md says
// why this algorithm and what each setting does.
package autopilot
