package visit

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// Proof of work on join (RoomConfig.PowBits): a new visitor's join carries
// a solved challenge, handed out by GET /rooms/{room}/challenge or with the
// 428 pow_required answer of a join without one. A visitor that already
// holds a credential re-joins for free: a refresh keeps the place.

var (
	errPowInvalid  = httperr.New(400, "pow_invalid", "the proof of work challenge is not one this server issued")
	errPowExpired  = httperr.New(400, "pow_expired", "the proof of work challenge expired; ask for a new one")
	errPowRoom     = httperr.New(400, "pow_wrong_room", "the proof of work challenge is for another room")
	errPowWeak     = httperr.New(400, "pow_too_weak", "the proof of work challenge is weaker than the room asks; ask for a new one")
	errPowUnsolved = httperr.New(400, "pow_unsolved", "the nonce does not solve the proof of work challenge")
	errPowUsed     = httperr.New(409, "pow_used", "the proof of work challenge was already used for a join; ask for a new one")
)

func powError(err error) error {
	switch {
	case errors.Is(err, visitorsig.ErrPowInvalid):
		return errPowInvalid
	case errors.Is(err, visitorsig.ErrPowExpired):
		return errPowExpired
	case errors.Is(err, visitorsig.ErrPowRoom):
		return errPowRoom
	case errors.Is(err, visitorsig.ErrPowWeak):
		return errPowWeak
	case errors.Is(err, visitorsig.ErrPowUnsolved):
		return errPowUnsolved
	case errors.Is(err, visitorsig.ErrPowUsed):
		return errPowUsed
	}
	return err
}

// challengeJSON is a challenge on the wire.
func challengeJSON(b []byte, ch string, n int, expires time.Time) []byte {
	b = append(b, `"challenge":`...)
	b = strconv.AppendQuote(b, ch)
	b = append(b, `,"powBits":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"expiresAt":`...)
	b = strconv.AppendQuote(b, expires.UTC().Format(time.RFC3339Nano))
	return b
}

// challenge hands out a fresh challenge for the room (GET
// /rooms/{room}/challenge). powBits 0 means the room asks for none.
func (a *API) challenge(c *fiber.Ctx) error {
	r, err := Room(c)
	if err != nil {
		return err
	}
	n := a.d.Rooms.PowBits(r)
	now := time.Now()
	b := append(make([]byte, 0, 192), '{')
	if n > 0 {
		b = challengeJSON(b, a.d.Challenges.NewChallenge(r, n, now), n, now.Add(visitorsig.ChallengeTTL))
	} else {
		b = append(b, `"powBits":0`...)
	}
	b = append(b, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(b)
}

// proof is a join's solution: from the JSON body's "pow" object, or the
// pow and nonce query parameters.
func proof(c *fiber.Ctx) (ch, nonce string, err error) {
	if ch, nonce = c.Query("pow"), c.Query("nonce"); ch != "" {
		return ch, nonce, nil
	}
	if noFields(c.Body()) {
		return "", "", nil
	}
	var in struct {
		Pow *struct {
			Challenge string `json:"challenge"`
			Nonce     string `json:"nonce"`
		} `json:"pow"`
	}
	if json.Unmarshal(c.Body(), &in) != nil {
		return "", "", fieldError("pow", `must be {"challenge": "...", "nonce": "..."}`)
	}
	if in.Pow == nil {
		return "", "", nil
	}
	return in.Pow.Challenge, in.Pow.Nonce, nil
}

// requireProof lets a join into room go on when the room asks for no proof
// of work, when visitor (empty for a new one) already holds a place there
// (a refresh keeps it for free), or when the join carries a valid, unused
// solution, which it spends. Otherwise it answers 428 pow_required with a
// fresh challenge and reports handled. A credential alone is not enough:
// credentials are free to get from any other room.
//
// What it let the join through with is kept in the request (powProven),
// for regate.
func (a *API) requireProof(c *fiber.Ctx, r, visitor string) (handled bool, err error) {
	n := a.d.Rooms.PowBits(r)
	if n == 0 {
		c.Locals(powProvenKey, 0)
		return false, nil
	}
	ch, nonce, err := proof(c)
	if err != nil {
		return false, err
	}
	now := time.Now()
	if ch == "" && visitor != "" {
		ctx, cancel := a.redisCtx(c)
		st, err := a.d.Queue.Status(ctx, r, visitor)
		cancel()
		if err != nil {
			return false, a.StoreError(c, err)
		}
		if st.Status == wire.StatusWaiting || st.Status == wire.StatusAdmitted {
			c.Locals(powProvenKey, math.MaxInt) // holds a place: no proof needed
			return false, nil
		}
	}
	if ch == "" {
		b := append(make([]byte, 0, 256), `{"error":{"code":"pow_required","message":"this room asks a new visitor to solve a proof of work first",`...)
		b = challengeJSON(b, a.d.Challenges.NewChallenge(r, n, now), n, now.Add(visitorsig.ChallengeTTL))
		b = append(b, "}}"...)
		c.Status(fiber.StatusPreconditionRequired)
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "no-store")
		return true, c.Send(b)
	}
	got, err := a.d.Challenges.CheckProof(ch, nonce, r, n, now)
	if err != nil {
		return false, powError(err)
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	if err := a.d.Queue.SpendProof(ctx, got, now); err != nil {
		if errors.Is(err, visitorsig.ErrPowUsed) || errors.Is(err, visitorsig.ErrPowExpired) {
			return false, powError(err)
		}
		return false, a.StoreError(c, err)
	}
	c.Locals(powProvenKey, n)
	return false, nil
}

// powProvenKey holds, in a join's request, the proof of work requireProof
// let it through with: the bits proven (0 when the room asked for none,
// math.MaxInt for a visitor who holds a place).
const powProvenKey = "powProven"
