package admin

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/wire"
)

// mintVisitor mints a visitor credential for an id chosen by a trusted
// backend (a signed-in user's id), so that user has one place per room
// across tabs and devices. The backend hands the credential to its page,
// which sends it as X-Visitor or visitor=.
func (a *API) mintVisitor(c *fiber.Ctx) error {
	var in struct {
		ID string `json:"id"`
	}
	if err := httperr.DecodeObject(c.Body(), &in); err != nil {
		return err
	}
	if !wire.ValidVisitor(in.ID) {
		return fieldError("id", "must match ^[A-Za-z0-9_-]{1,64}$")
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	a.auditEvent(ctx, "", label(c), Entry{Action: "mint-visitor", Visitor: in.ID})
	return c.JSON(fiber.Map{"id": in.ID, "visitor": a.opts.Credential(in.ID)})
}

// maxInvites bounds the codes one mint call makes.
const maxInvites = 10000

// mintInvites mints invite codes for the route's room: one, or a batch of
// count, each admitting uses joins until it expires, optionally only for
// one visitor id (a signed-in user's), and priority codes (priority: true),
// whose joins go ahead of the public queue in any room. Nothing is stored: a code is
// checked by its signature and counted when used.
func (a *API) mintInvites(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	var in struct {
		Count            *int     `json:"count"`
		Uses             *int     `json:"uses"`
		ExpiresAt        *string  `json:"expiresAt"`
		ExpiresInSeconds *float64 `json:"expiresInSeconds"`
		Visitor          *string  `json:"visitor"`
		Priority         *bool    `json:"priority"`
	}
	if err := decodeStrict(c.Body(), &in); err != nil {
		return err
	}
	count, uses := 1, 1
	if in.Count != nil {
		count = *in.Count
	}
	if in.Uses != nil {
		uses = *in.Uses
	}
	expires := time.Now().Add(7 * 24 * time.Hour)
	switch {
	case count < 1 || count > maxInvites:
		return fieldError("count", "must be between 1 and 10000")
	case uses < 1 || uses > 1000000:
		return fieldError("uses", "must be between 1 and 1000000")
	case in.ExpiresAt != nil && in.ExpiresInSeconds != nil:
		return fieldError("expiresAt", "give expiresAt or expiresInSeconds, not both")
	case in.Visitor != nil && !wire.ValidVisitor(*in.Visitor):
		return fieldError("visitor", "must match ^[A-Za-z0-9_-]{1,64}$")
	case in.Visitor != nil && count > 1:
		return fieldError("visitor", "a code for one visitor is minted alone (count 1)")
	}
	if in.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
		if err != nil {
			return fieldError("expiresAt", "must be an RFC 3339 time")
		}
		expires = t
	}
	if in.ExpiresInSeconds != nil {
		sec := *in.ExpiresInSeconds
		if !(sec >= 1 && sec <= 366*24*3600) {
			return fieldError("expiresInSeconds", "must be between 1 and 31622400")
		}
		expires = time.Now().Add(time.Duration(sec * float64(time.Second)))
	}
	if !expires.After(time.Now()) || expires.After(time.Now().Add(366*24*time.Hour)) {
		return fieldError("expiresAt", "must be in the future, within a year")
	}
	expires = expires.Truncate(time.Second)
	visitor := ""
	if in.Visitor != nil {
		visitor = *in.Visitor
	}
	prio := in.Priority != nil && *in.Priority
	codes := make([]string, count)
	for i := range codes {
		codes[i] = a.opts.Invites.Mint(invite.Code{Room: r, ID: invite.NewID(), Expires: expires, Uses: uses, Visitor: visitor, Priority: prio})
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	a.auditEvent(ctx, r, label(c), Entry{Action: "mint-invites", Visitor: visitor, Invites: &Invites{
		Count: count, Uses: uses, Priority: prio, ExpiresAt: expires.UTC().Format(time.RFC3339),
	}})
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"room": r, "codes": codes, "uses": uses, "visitor": visitor, "priority": prio,
		"expiresAt": expires.UTC().Format(time.RFC3339),
	})
}

var errNoSession = httperr.New(404, "session_not_found", "this visitor holds no session in this room")

// endSession is DELETE /api/v1/admin/rooms/{room}/sessions/{visitor}.
func (a *API) endSession(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	id := c.Params("visitor")
	if !wire.ValidVisitor(id) {
		return httperr.New(400, "invalid_visitor", "visitor ids match ^[A-Za-z0-9_-]{1,64}$")
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	nb, exp, ok, err := a.store.Session(ctx, r, id)
	if err != nil {
		return a.storeError(c, err)
	}
	if !ok {
		return errNoSession
	}
	if err := a.opts.EndSession(ctx, r, id, nb, exp); err != nil {
		return a.storeError(c, err)
	}
	a.auditBy(ctx, c, r, Entry{Action: "end-session", Visitor: id})
	return c.SendStatus(fiber.StatusNoContent)
}
