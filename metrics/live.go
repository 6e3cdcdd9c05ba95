package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
)

// Hub is what the metrics read of the hub.
type Hub interface {
	Stats() hub.Stats
	Ready() bool // subscribed and running
}

// Rooms is what the metrics read of the room cache: each room's figures
// as of its last refresh, by room. The names become labels: the room
// cache holds a bounded set (rooms an operator configured).
type Rooms interface {
	Snapshot() map[string]Room
}

// Room is one room's figures as the metrics read them.
type Room struct {
	queue.RoomStats
	Paused bool // the room's settings pause its admissions
}

// Polls is what the metrics read of the poll cache.
type Polls interface {
	Len() int64 // answers held in memory
}

// Sources are the live parts the gauges read at each scrape.
type Sources struct {
	Hub      Hub
	Rooms    Rooms
	Polls    Polls
	MaxConns int // push connections the instance may hold (-max-conns)
}

// Watch registers the gauges and counters read from src at each scrape.
// Call it once, after src's parts exist: a second call panics.
func (m *Metrics) Watch(src Sources) {
	h, polls := src.Hub, src.Polls
	m.reg.MustRegister(roomCollector{src.Rooms},
		gauge("waitroom_max_connections", "Push connections this instance may hold (-max-conns).", func() float64 { return float64(src.MaxConns) }),
		gauge("waitroom_pubsub_up", "1 while this instance's Redis pub/sub subscription serves its rooms, else 0.", func() float64 {
			if h.Ready() {
				return 1
			}
			return 0
		}),
		gauge("waitroom_poll_cache_entries", "Poll answers held in memory.", func() float64 { return float64(polls.Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_connections", Help: "Open push connections.", ConstLabels: prometheus.Labels{"transport": "ws"}},
			func() float64 { return float64(h.Stats().Conns["ws"]) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_connections", Help: "Open push connections.", ConstLabels: prometheus.Labels{"transport": "sse"}},
			func() float64 { return float64(h.Stats().Conns["sse"]) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_push_messages_total", Help: "Messages written to push connections."},
			func() float64 { return float64(h.Stats().Sent) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_ws_heartbeats_total", Help: "Heartbeat messages queued to quiet WebSocket connections."},
			func() float64 { return float64(m.wsHeartbeats.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_push_dropped_slow_total", Help: "Push connections closed as slow consumers."},
			func() float64 { return float64(h.Stats().DroppedSlow) }),
	)
}

func gauge(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
}

var (
	waitingDesc = prometheus.NewDesc("waitroom_waiting", "Visitors waiting in a room (queue and pre-queue), as of the last refresh.", []string{"room"}, nil)
	activeDesc  = prometheus.NewDesc("waitroom_active_tokens", "Live entry tokens of a room, as of the last refresh.", []string{"room"}, nil)
	rateDesc    = prometheus.NewDesc("waitroom_admission_rate", "Measured admissions per second of a room (smoothed).", []string{"room"}, nil)
	pausedDesc  = prometheus.NewDesc("waitroom_room_paused", "1 while a room's settings pause its admissions, else 0, as of the last refresh.", []string{"room"}, nil)
)

// roomCollector reports per-room figures from the room cache, so a scrape
// costs no Redis call.
type roomCollector struct{ rooms Rooms }

func (roomCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- waitingDesc
	ch <- activeDesc
	ch <- rateDesc
	ch <- pausedDesc
}

func (rc roomCollector) Collect(ch chan<- prometheus.Metric) {
	for room, st := range rc.rooms.Snapshot() {
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(st.Waiting+st.PreQueue), room)
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(st.ActiveTokens), room)
		ch <- prometheus.MustNewConstMetric(rateDesc, prometheus.GaugeValue, st.Rate, room)
		paused := 0.0
		if st.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, paused, room)
	}
}
