package visit

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/report"
	"github.com/waitroom/waitroom/wire"
)

// Report counts what visitors do, for the room reports (a
// *report.Recorder); nil counts nothing. Its methods must not block.
type Report interface {
	// Joined counts a visitor that took a new place at issuedAt, told to
	// wait as told says.
	Joined(room, visitor string, issuedAt time.Time, told report.Promise)
	// Refused counts a join refused for reason: "rate_limit", "pow",
	// "invite" or "closed".
	Refused(room, reason string)
	// Left counts a visitor that left the queue or gave its token back.
	Left(room string)
	// Ended counts a visitor's time on the origin, from its entry token's
	// notBefore to end.
	Ended(room string, notBefore, end time.Time)
}

// countJoins counts the joins the handlers after it refuse, by reason
// (Report.Refused).
func (a *API) countJoins(c *fiber.Ctx) error {
	err := c.Next()
	if a.d.Report == nil || err == nil {
		return err
	}
	var he *httperr.Error
	if !errors.As(err, &he) {
		return err
	}
	if reason := refusal(he.Code); reason != "" {
		a.d.Report.Refused(c.Params("room"), reason)
	}
	return err
}

// refusal is the report's reason for a join refused with code, "" for a
// failure that refuses nothing (a bad request, the store unreachable). A
// pow_required answer is the challenge of a join that is yet to come, not
// a refusal.
func refusal(code string) string {
	switch {
	case code == errRateLimited.Code:
		return "rate_limit"
	case strings.HasPrefix(code, "pow_") && code != "pow_required":
		return "pow"
	case strings.HasPrefix(code, "invite_") || code == errInviteInvalid.Code:
		return "invite"
	}
	return ""
}

// noteJoin counts a join's answer st: a new place (fresh, ticket t) or a
// room that takes nobody now.
func (a *API) noteJoin(r, visitor string, st wire.State, t wire.Ticket, fresh bool) {
	switch {
	case a.d.Report == nil:
	case st.Status == wire.StatusClosed:
		a.d.Report.Refused(r, "closed")
	case fresh:
		told := report.Promise{ETA: time.Duration(st.ETASeconds) * time.Second}
		if st.Status != wire.StatusWaiting {
			told.ETA = -1
		}
		if rg := st.ETARange; !rg.IsZero() {
			told.Low, told.High = time.Duration(rg.Low)*time.Second, time.Duration(rg.High)*time.Second
		}
		a.d.Report.Joined(r, visitor, t.IssuedAt, told)
	}
}
