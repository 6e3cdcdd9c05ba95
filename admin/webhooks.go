package admin

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/webhook"
)

// Webhooks is what the admin API needs of the webhooks (a
// *webhook.Hooks): the events its audit trail turns into, the rooms'
// endpoints and the dead-letter list.
type Webhooks interface {
	Emit(ctx context.Context, room, t string, data any) error
	RoomEndpoints(ctx context.Context, room string) ([]webhook.Endpoint, error)
	SetRoomEndpoints(ctx context.Context, room string, eps []webhook.Endpoint) error
	Dead(ctx context.Context, limit int) ([]webhook.Dead, error)
	Redeliver(ctx context.Context, id string) error
}

// deadShown is how many dead deliveries the dashboard lists.
const deadShown = 200

func (a *API) mountWebhooks(g fiber.Router) {
	if a.opts.Webhooks == nil {
		return
	}
	g.Get("/rooms/:room/webhooks", a.roomWebhooks)
	g.Put("/rooms/:room/webhooks", a.putRoomWebhooks)
	g.Get("/webhooks/dead", a.deadWebhooks)
	g.Post("/webhooks/dead/:id/redeliver", a.redeliverWebhook)
}

// auditEvents are the webhook events an audit action is.
var auditEvents = map[string]string{
	"create": webhook.RoomCreated,
	"pause":  webhook.RoomPaused,
	"resume": webhook.RoomResumed,
	"update": webhook.SettingsChanged,
}

// emitAudit sends the webhook events room's audit entry e is, with the
// entry: its action's, and for an update that paused or resumed the
// room, that too. A failure is logged: the change is made already.
func (a *API) emitAudit(ctx context.Context, room string, e Entry) {
	if a.opts.Webhooks == nil {
		return
	}
	types := []string{auditEvents[e.Action]}
	if e.Action == "update" {
		for _, c := range e.Changes {
			if c.Field == "paused" {
				types = append(types, map[bool]string{true: webhook.RoomPaused, false: webhook.RoomResumed}[c.To == true])
			}
		}
	}
	for _, t := range types {
		if t == "" {
			continue
		}
		if err := a.opts.Webhooks.Emit(ctx, room, t, map[string]any{"audit": e}); err != nil {
			a.log.Warn("webhook event not sent", "room", room, "type", t, "err", err)
		}
	}
}

// webhookJSON is an endpoint as the API shows it: the secret masked.
type webhookJSON struct {
	URL    string   `json:"url"`
	Secret string   `json:"secret,omitempty"`
	Events []string `json:"events"`
}

func webhooksJSON(eps []webhook.Endpoint) []webhookJSON {
	out := make([]webhookJSON, len(eps))
	for i, e := range eps {
		m := e.Masked()
		out[i] = webhookJSON{URL: m.URL, Secret: m.Secret, Events: m.Events}
	}
	return out
}

// roomWebhooks lists room's own endpoints, secrets masked.
func (a *API) roomWebhooks(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	eps, err := a.opts.Webhooks.RoomEndpoints(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	return c.JSON(fiber.Map{"room": r, "webhooks": webhooksJSON(eps), "events": webhook.Events})
}

var errRoomNotFound = httperr.New(404, "room_not_found", "this room does not exist; create it first")

// putRoomWebhooks replaces room's endpoints. An endpoint without a secret
// keeps the one its URL has now, or gets a new one, shown in full once in
// the answer's newSecrets.
func (a *API) putRoomWebhooks(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	var in struct {
		Webhooks []webhookJSON `json:"webhooks"`
	}
	if err := decodeStrict(c.Body(), &in); err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if ok, err := a.store.RoomExists(ctx, r); err != nil {
		return a.storeError(c, err)
	} else if !ok {
		return errRoomNotFound
	}
	old, err := a.opts.Webhooks.RoomEndpoints(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	eps, fresh := withSecrets(in.Webhooks, old)
	if err := a.opts.Webhooks.SetRoomEndpoints(ctx, r, eps); err != nil {
		var ie *webhook.InvalidError
		if errors.As(err, &ie) {
			return invalidWebhook(ie)
		}
		return a.storeError(c, err)
	}
	// The audit trail is read by every role: a URL's path and query may
	// hold the receiver's own credentials, shown to admins only (above).
	urls := make([]string, len(eps))
	for i, e := range eps {
		urls[i] = webhook.RedactURL(e.URL)
	}
	a.auditEvent(ctx, r, label(c), Entry{Action: "set-webhooks", Webhooks: urls})
	return c.JSON(fiber.Map{"room": r, "webhooks": webhooksJSON(eps), "events": webhook.Events, "newSecrets": fresh})
}

// withSecrets fills in the secrets of in: the one old has for the same
// URL, or a new one (returned by URL).
func withSecrets(in []webhookJSON, old []webhook.Endpoint) ([]webhook.Endpoint, map[string]string) {
	had := make(map[string]string, len(old))
	for _, e := range old {
		had[e.URL] = e.Secret
	}
	fresh := map[string]string{}
	eps := make([]webhook.Endpoint, len(in))
	for i, w := range in {
		e := webhook.Endpoint{URL: w.URL, Secret: w.Secret, Events: w.Events}
		if e.Events == nil {
			e.Events = []string{}
		}
		if e.Secret == "" {
			if s, ok := had[e.URL]; ok {
				e.Secret = s
			} else {
				e.Secret = webhook.NewSecret()
				fresh[e.URL] = e.Secret
			}
		}
		eps[i] = e
	}
	return eps, fresh
}

// deadWebhooks lists the deliveries that failed every attempt, latest
// first.
func (a *API) deadWebhooks(c *fiber.Ctx) error {
	ctx, cancel := a.ctx(c)
	defer cancel()
	dead, err := a.opts.Webhooks.Dead(ctx, deadShown)
	if err != nil {
		return a.storeError(c, err)
	}
	return c.JSON(fiber.Map{"dead": dead})
}

var errNoDead = httperr.New(404, "dead_letter_not_found", "no dead delivery has this id (it may have been redelivered)")

// redeliverWebhook sends a dead delivery again, from its first attempt.
func (a *API) redeliverWebhook(c *fiber.Ctx) error {
	id := c.Params("id")
	ctx, cancel := a.ctx(c)
	defer cancel()
	err := a.opts.Webhooks.Redeliver(ctx, id)
	switch {
	case errors.Is(err, webhook.ErrNotDead):
		return errNoDead
	case err != nil:
		return a.storeError(c, err)
	}
	a.auditEvent(ctx, "", label(c), Entry{Action: "redeliver-webhook", Delivery: id})
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"redelivered": id})
}

// invalidWebhook is the 400 answer to an endpoint webhook refused.
func invalidWebhook(ie *webhook.InvalidError) error {
	switch ie.Code {
	case "unknown_event":
		return httperr.New(400, "unknown_event", ie.Msg)
	case "invalid_webhook_secret":
		return httperr.New(400, "invalid_webhook_secret", ie.Msg)
	case "too_many_webhooks":
		return httperr.New(400, "too_many_webhooks", ie.Msg)
	case "webhook_target_not_allowed":
		return httperr.New(400, "webhook_target_not_allowed", ie.Msg)
	}
	return httperr.New(400, "invalid_webhook_url", ie.Msg)
}
