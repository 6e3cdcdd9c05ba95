// Package report keeps what happened in each room, minute by minute, in
// bounded form in Redis for a retention, and reads it back as a report
// over any time range: arrivals, peak waiting, admissions, refused joins
// by reason, visitors lost while waiting, time in queue and on the
// origin, how well the wait promised at join came true, and when the
// seats sold out.
//
// Counts are made in memory by a Recorder (its methods never block) and
// written once a second per room in one script call, so the Redis work
// does not grow with the visitors waiting. Each room's data is a hash per
// hour of per-minute fields; durations go into fixed log-spaced
// histograms, so percentiles are exact to within one bucket.
package report
