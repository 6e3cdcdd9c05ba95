package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// csvHeader names the columns of WriteCSV.
var csvHeader = []string{
	"minute", "arrivals", "peak_waiting", "admitted",
	"refused_rate_limit", "refused_pow", "refused_invite", "refused_closed",
	"left_waiting", "left_away", "left_dropped",
}

// WriteCSV writes r's series to w as CSV: a header row, then one row per
// minute (RFC 3339, UTC).
func (r Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, m := range r.Series {
		row := []string{m.At.UTC().Format(time.RFC3339)}
		for _, n := range []int64{
			m.Arrivals, m.PeakWaiting, m.Admitted,
			m.Refused.RateLimit, m.Refused.Pow, m.Refused.Invite, m.Refused.Closed,
			m.Left.Waiting, m.Left.Away, m.Left.Dropped,
		} {
			row = append(row, strconv.FormatInt(n, 10))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
