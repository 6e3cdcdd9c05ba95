package main

import (
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/report"
)

// newReport makes the recorder of the room reports, on the server's
// Redis; its counts are written by the "reports" task of run.
func (s *server) newReport() {
	s.report = report.New(s.metrics.Redis(s.redis.Redis()), &report.Options{
		Retention: s.cfg.ReportRetention, OnReady: s.reportReady, Logger: s.log,
	})
}

// noteTick hands each admission tick this instance took to the reports:
// the queue's length as the tick found it, and whom it admitted.
func (s *server) noteTick(room string, r queue.Result) {
	s.report.Ticked(room, r.Waiting+int64(len(r.Admitted)), r.Admitted)
}
