package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Run delivers due deliveries until ctx ends: it claims up to MaxInFlight
// at a time, no more than MaxPerEndpoint of one endpoint and MaxPerRoom
// of one room's endpoints, and makes each attempt on its own goroutine,
// bounded by Timeout. It returns ctx's error once every attempt it
// started has ended; an attempt cut short by the end gives its delivery
// back, due at once, for another instance. Every instance may run it
// (once per Hooks): each attempt is made by one.
func (h *Hooks) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer h.o.Client.CloseIdleConnections()
	defer wg.Wait()
	slots := make(chan struct{}, h.o.MaxInFlight)
	freed := make(chan struct{}, 1)
	t := time.NewTicker(h.o.Poll)
	defer t.Stop()
	polls := 0
	var mu sync.Mutex
	busy := map[string]int{} // attempts in flight by endpoint, and by "room:" and room
	take := func(j job, d int) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range busyKeys(j) {
			if busy[k] += d; busy[k] <= 0 {
				delete(busy, k)
			}
		}
	}
	for {
		if n := cap(slots) - len(slots); n > 0 {
			name := h.claimName()
			mu.Lock()
			req := claimReq{n: n, lease: h.o.Lease, name: name, epMost: h.o.MaxPerEndpoint, roomMost: h.o.MaxPerRoom,
				busy: maps.Clone(busy), epoch: randomHex(8)}
			mu.Unlock()
			got, err := claim(ctx, h.r, req)
			switch {
			case err == nil:
				h.claimLog.OK()
			case ctx.Err() == nil:
				h.claimLog.Fail("webhook claim failed", err)
			}
			adopted := false
			if err == nil {
				h.noticeEpoch(ctx, got.epoch, got.made)
				if got.legacy {
					n, err := adoptLegacy(ctx, h.r)
					if err != nil && ctx.Err() == nil {
						h.log.Warn("webhook deliveries of an earlier build not moved", "err", err)
					}
					adopted = err == nil
					if n > 0 {
						h.log.Warn("webhook deliveries of an earlier build unreadable: left in the outbox's jobs, never attempted", "count", n)
					}
				}
			}
			for _, j := range got.jobs {
				slots <- struct{}{}
				take(j, 1)
				wg.Go(func() {
					defer func() {
						take(j, -1)
						<-slots
						select {
						case freed <- struct{}{}:
						default:
						}
					}()
					h.attempt(ctx, name, j)
				})
			}
			if len(got.jobs) == n || adopted {
				continue // more may be due
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if polls++; polls%pruneEvery == 0 {
				if err := h.prune(ctx); err != nil && ctx.Err() == nil {
					h.log.Warn("webhook kept deliveries not checked", "err", err)
				}
			}
		case <-h.wake:
		case <-freed:
		}
	}
}

// busyKeys are the counts of attempts in flight an attempt at j is in:
// its endpoint's, and for a room's endpoint, the room's.
func busyKeys(j job) []string {
	if j.Scope == "room" {
		return []string{j.endpoint(), "room:" + j.Room}
	}
	return []string{j.endpoint()}
}

// claimName names one claim: the instance and a counter, so a finish
// under a lease that ran out (and was claimed anew) does nothing.
func (h *Hooks) claimName() string {
	return h.name + ":" + strconv.FormatUint(h.claims.Add(1), 10)
}

// attempt makes one attempt at j, claimed as name, and records what came
// of it.
func (h *Hooks) attempt(ctx context.Context, name string, j job) {
	status, err := h.send(ctx, j)
	// The outcome is written even when ctx has just ended.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	outcome, delay := "done", time.Duration(0)
	switch {
	case errors.Is(err, errRemoved):
		outcome, j.LastError = "dead", err.Error()
	case errors.Is(err, ErrTargetNotAllowed):
		// One message whatever listens there, so the dead-letter list
		// tells nothing of an internal address; no retry reaches it
		// either.
		j.Attempts++
		outcome, j.LastStatus, j.LastError = "dead", 0, ErrTargetNotAllowed.Error()
	case err != nil && ctx.Err() != nil:
		outcome = "release" // not the receiver's fault: no attempt counted
	case err != nil || status < 200 || status > 299:
		j.Attempts++
		j.LastStatus, j.LastError = status, describe(status, err)
		if j.Attempts > len(h.backoff) {
			outcome = "dead"
		} else {
			outcome, delay = "retry", jitter(h.backoff[j.Attempts-1])
		}
		h.log.Warn("webhook attempt failed", "room", j.Room, "type", j.Type, "url", j.URL, "id", j.Msg, "attempt", j.Attempts, "err", j.LastError)
	default:
		j.Attempts++
	}
	if outcome == "dead" {
		j.DiedMs = h.o.Now().UnixMilli()
		h.log.Error("webhook delivery dead", "room", j.Room, "type", j.Type, "url", j.URL, "id", j.Msg, "attempts", j.Attempts, "err", j.LastError)
	}
	if err := finish(wctx, h.r, name, outcome, j, delay.Milliseconds(), h.o.DeadKeep); err != nil {
		// Kept as it was: if Redis lost it, it goes back.
		h.log.Warn("webhook outcome not recorded", "id", j.ID, "outcome", outcome, "err", err)
		return
	}
	switch outcome {
	case "done", "dead":
		h.forget(j.ID)
	default:
		h.keep(j, h.o.Now().Add(delay).UnixMilli())
	}
}

// errRemoved is a delivery to an endpoint no longer configured.
var errRemoved = errors.New("the endpoint is configured no more")

// send POSTs j's body, signed now, and returns the answer's status.
func (h *Hooks) send(ctx context.Context, j job) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
	defer cancel()
	secret, ok, err := h.secret(rctx, j)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errRemoved
	}
	body := []byte(j.Body)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, j.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "waitroom-webhooks")
	if err := setHeaders(req.Header, secret, j.Msg, h.o.Now(), body); err != nil {
		return 0, err
	}
	resp, err := h.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	// A little of the answer is read so the connection can be used again.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func describe(status int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("answered %d", status)
}

// jitter spreads d by ±10 %, so the retries of many deliveries that
// failed together do not arrive together.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
