package report

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

func loadScript(name string) *rediscall.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return rediscall.NewScript("report_"+name, string(src))
}

var (
	flushScript = loadScript("flush")
	takeScript  = loadScript("take")
)

// Keys of a room's report, all with the room's hash tag so they share the
// slot of its queue.
func roomPrefix(room string) string { return "wr:{" + room + "}:" }

// hourKey is the hash of the hour starting at Unix hour h.
func hourKey(room string, h int64) string {
	return roomPrefix(room) + "rep:h:" + strconv.FormatInt(h, 10)
}

// joinKey is the hash of the joins of Unix day d waiting for admission.
func joinKey(room string, d int64) string {
	return roomPrefix(room) + "rep:j:" + strconv.FormatInt(d, 10)
}

func baseKey(room string) string  { return roomPrefix(room) + "rep:base" }
func statsKey(room string) string { return roomPrefix(room) + "stats" }

// joinTTL is how long a join waits for its admission to be matched: a
// wait longer than a day is counted as admitted but not timed.
const joinTTL = 48 * time.Hour

// flushRoom matches room's due admissions (all with a zero now) with
// their joins, then writes its counts, an hour's hash at a time.
func (rc *Recorder) flushRoom(ctx context.Context, room string, now time.Time) error {
	rc.mu.Lock()
	p := rc.rooms[room]
	if p == nil {
		rc.mu.Unlock()
		return nil
	}
	var due []admission
	if now.IsZero() {
		due, p.admits = p.admits, nil
	} else {
		i := 0
		for i < len(p.admits) && !p.admits[i].due.After(now) {
			i++
		}
		due, p.admits = p.admits[:i:i], slices.Clone(p.admits[i:])
	}
	rc.mu.Unlock()
	// Matched before the write, so that the joins this instance holds are
	// not written only to be read back.
	merr := rc.match(ctx, room, due)
	rc.mu.Lock()
	minutes, joins := p.minutes, p.joins
	p.minutes, p.joins = make(map[int64]*minute), nil
	if p.empty() && rc.rooms[room] == p {
		delete(rc.rooms, room)
	}
	rc.mu.Unlock()
	if err := rc.write(ctx, room, minutes, joins); err != nil {
		return err
	}
	return merr
}

// match reads and deletes the joins of the visitors admitted in due and
// counts their waits.
func (rc *Recorder) match(ctx context.Context, room string, due []admission) error {
	if len(due) == 0 {
		return nil
	}
	// Joins this instance has not written yet are matched here.
	local := make(map[string]string)
	rc.mu.Lock()
	if p := rc.rooms[room]; p != nil {
		for i := 0; i+1 < len(p.joins); i += 2 {
			local[p.joins[i]] = p.joins[i+1]
		}
	}
	rc.mu.Unlock()
	ask := make([]string, 0, len(due))
	for _, a := range due {
		if _, ok := local[a.visitor]; !ok {
			ask = append(ask, a.visitor)
		}
	}
	var err error
	if len(ask) > 0 {
		d := time.Now().Unix() / 86400
		var v any
		v, err = rc.r.Eval(ctx, takeScript, []string{joinKey(room, d), joinKey(room, d-1)}, ask...)
		arr, _ := v.([]any)
		for i, s := range arr {
			if str, ok := s.(string); ok && str != "" && i < len(ask) {
				local[ask[i]] = str
			}
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	p := rc.room(room)
	now := time.Now()
	for _, a := range due {
		if j, ok := parseJoin(local[a.visitor]); ok {
			p.at(now).matched(j, a.notBefore)
		}
	}
	p.joins = dropJoins(p.joins, local, due)
	if err != nil {
		return fmt.Errorf("report: match admissions: %w", err)
	}
	return nil
}

// dropJoins removes from joins those of the visitors in due (matched
// here before they were written).
func dropJoins(joins []string, local map[string]string, due []admission) []string {
	if len(joins) == 0 {
		return joins
	}
	done := make(map[string]bool, len(due))
	for _, a := range due {
		done[a.visitor] = true
	}
	out := joins[:0]
	for i := 0; i+1 < len(joins); i += 2 {
		if !done[joins[i]] {
			out = append(out, joins[i], joins[i+1])
		}
	}
	return out
}

// write writes minutes and joins in one script call per hour they cover;
// the call of the current hour also counts the queue's presence and
// sold-out changes.
func (rc *Recorder) write(ctx context.Context, room string, minutes map[int64]*minute, joins []string) error {
	nowMin := time.Now().Unix() / 60
	hours := map[int64][]int64{nowMin / 60: nil}
	for k := range minutes {
		hours[k/60] = append(hours[k/60], k)
	}
	ttl := strconv.FormatInt(int64(rc.opts.Retention/time.Second)+3600, 10)
	jttl := strconv.FormatInt(int64(joinTTL/time.Second), 10)
	day := time.Now().Unix() / 86400
	for h, ks := range hours {
		var incr, maxes []string
		for _, k := range ks {
			incr, maxes = minutes[k].fields(strconv.FormatInt(k%60, 10)+":", incr, maxes)
		}
		presence, js := "", []string(nil)
		if h == nowMin/60 {
			presence, js = strconv.FormatInt(nowMin%60, 10), joins
		}
		args := make([]string, 0, 5+len(incr)+len(maxes)+len(js))
		args = append(args, ttl, jttl, presence, strconv.Itoa(len(incr)/2), strconv.Itoa(len(maxes)/2))
		args = append(append(append(args, incr...), maxes...), js...)
		keys := []string{hourKey(room, h), baseKey(room), joinKey(room, day), statsKey(room)}
		if _, err := rc.r.Eval(ctx, flushScript, keys, args...); err != nil {
			return fmt.Errorf("report: write: %w", err)
		}
	}
	return nil
}
