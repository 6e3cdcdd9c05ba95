// Package httperr is the one JSON error shape every HTTP handler of the
// server answers with: {"error":{"code","message"}}, a stable code per
// cause, never internals.
package httperr

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/waitroom/waitroom/wire"
)

// Error is every error that crosses the HTTP boundary.
type Error struct {
	Status  int
	Code    string
	Message string
	Field   string // the offending setting, for invalid_field
	WaitMs  int64  // for too_early: how long until the token is valid
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns the error answered with status, code and msg.
func New(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// ErrInvalidJSON answers a body that is not one JSON object.
var ErrInvalidJSON = New(400, "invalid_json", "the body must be a JSON object")

// ErrUnavailable answers a request the queue store could not serve.
var ErrUnavailable = New(503, "unavailable", "the queue store is unreachable; retry shortly")

// Body is e as the JSON the client reads. A message or field may hold the
// client's own bytes (a settings key it sent, say), so they are written as
// JSON strings, not in Go's quoting, whose \x escapes JSON does not have.
func (e *Error) Body() []byte {
	b := make([]byte, 0, 96+len(e.Message))
	b = append(b, `{"error":{"code":`...)
	b = wire.AppendString(b, e.Code)
	b = append(b, `,"message":`...)
	b = wire.AppendString(b, e.Message)
	if e.WaitMs > 0 {
		b = append(b, `,"waitMs":`...)
		b = strconv.AppendInt(b, e.WaitMs, 10)
	}
	if e.Field != "" {
		b = append(b, `,"field":`...)
		b = wire.AppendString(b, e.Field)
	}
	return append(b, "}}"...)
}

// Write answers c with e.
func Write(c *fiber.Ctx, e *Error) error {
	c.Status(e.Status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(e.Body())
}

// Handler is fiber's error handler: an *Error as it is, fiber's own
// errors as their stable codes, anything else as a logged 500 that shows
// nothing of its cause.
func Handler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var ae *Error
		if errors.As(err, &ae) {
			return Write(c, ae)
		}
		var fe *fiber.Error
		if errors.As(err, &fe) {
			switch fe.Code {
			case fiber.StatusNotFound:
				return Write(c, New(404, "not_found", "no such route"))
			case fiber.StatusMethodNotAllowed:
				return Write(c, New(405, "method_not_allowed", "method not allowed on this route"))
			case fiber.StatusRequestEntityTooLarge:
				return Write(c, New(413, "body_too_large", "request body is over 64 KiB"))
			case fiber.StatusRequestTimeout:
				return Write(c, New(408, "timeout", "request timed out"))
			}
			if fe.Code >= 400 && fe.Code < 500 {
				return Write(c, New(fe.Code, "bad_request", "the request could not be read"))
			}
		}
		log.Error("request failed", "path", c.Path(), "err", err)
		return Write(c, New(500, "internal", "internal error"))
	}
}

// KnownMethods answers a request whose method fiber does not know with
// the JSON error: fiber itself answers those with a plain-text 400 before
// any handler or the error handler runs.
func KnownMethods(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	body := New(405, "method_not_allowed", "method not allowed on this route").Body()
	return func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Method()) {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
			fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace, fiber.MethodPatch:
			next(ctx)
			return
		}
		ctx.SetStatusCode(fiber.StatusMethodNotAllowed)
		ctx.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		ctx.SetBody(body)
	}
}

// DecodeObject decodes a JSON object body into v; unknown fields are
// ignored. Anything else is ErrInvalidJSON.
func DecodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return ErrInvalidJSON
	}
	if err := json.Unmarshal(b, v); err != nil {
		return ErrInvalidJSON
	}
	return nil
}
