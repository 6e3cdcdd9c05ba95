package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Dead is a delivery that failed every attempt.
type Dead struct {
	ID         string    `json:"id"`  // the delivery, for Redeliver
	Msg        string    `json:"msg"` // its webhook-id
	Room       string    `json:"room"`
	Type       string    `json:"type"`
	URL        string    `json:"url"`
	Scope      string    `json:"scope"` // deployment or room
	Attempts   int       `json:"attempts"`
	LastStatus int       `json:"lastStatus,omitempty"`
	LastError  string    `json:"lastError"`
	CreatedAt  time.Time `json:"createdAt"`
	DiedAt     time.Time `json:"diedAt"`
}

// Dead lists up to limit dead deliveries, the latest first.
func (h *Hooks) Dead(ctx context.Context, limit int) ([]Dead, error) {
	v, err := h.r.Do(ctx, "ZREVRANGE", deadKey, "0", strconv.Itoa(limit-1))
	if err != nil {
		return nil, fmt.Errorf("webhook: dead: %w", err)
	}
	flat, _ := v.([]any)
	out := make([]Dead, 0, len(flat))
	for _, f := range flat {
		id, _ := f.(string)
		j, ok, err := h.deadJob(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // redelivered meanwhile
		}
		out = append(out, Dead{
			ID: j.ID, Msg: j.Msg, Room: j.Room, Type: j.Type, URL: j.URL, Scope: j.Scope,
			Attempts: j.Attempts, LastStatus: j.LastStatus, LastError: j.LastError,
			CreatedAt: time.UnixMilli(j.CreatedMs).UTC(), DiedAt: time.UnixMilli(j.DiedMs).UTC(),
		})
	}
	return out, nil
}

func (h *Hooks) deadJob(ctx context.Context, id string) (job, bool, error) {
	v, err := h.r.Do(ctx, "HGET", deadJobsKey, id)
	if err != nil {
		return job{}, false, fmt.Errorf("webhook: dead: %w", err)
	}
	s, _ := v.(string)
	var j job
	if s == "" || json.Unmarshal([]byte(s), &j) != nil {
		return job{}, false, nil
	}
	return j, true, nil
}

// ErrNotDead is a Redeliver of a delivery that is not in the dead-letter
// list.
var ErrNotDead = errors.New("webhook: no such dead delivery")

// Redeliver moves the dead delivery id back to the outbox, due now, with
// its attempts counted from zero; it keeps its webhook-id, so a receiver
// that saw it already can tell. ErrNotDead when there is none.
func (h *Hooks) Redeliver(ctx context.Context, id string) error {
	j, ok, err := h.deadJob(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotDead
	}
	j.Attempts, j.LastStatus, j.LastError, j.DiedMs = 0, 0, "", 0
	b, _ := json.Marshal(j)
	v, err := h.r.Eval(ctx, redeliverScript, []string{readyKey, jobsKey, deadKey, deadJobsKey}, id, string(b), j.endpoint())
	if err != nil {
		return fmt.Errorf("webhook: redeliver: %w", err)
	}
	if n, _ := v.(int64); n != 1 {
		return ErrNotDead
	}
	h.keep(j, h.o.Now().UnixMilli())
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return nil
}
