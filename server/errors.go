package main

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// apiError is every error that crosses the HTTP boundary: one JSON shape
// with a stable code.
type apiError struct {
	Status  int
	Code    string
	Message string
	Field   string // the offending setting, for invalid_field
	WaitMs  int64  // for too_early: how long until the token is valid
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

// writeError writes {"error":{"code","message"}}.
func writeError(c *fiber.Ctx, e *apiError) error {
	b := make([]byte, 0, 96+len(e.Message))
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendQuote(b, e.Code)
	b = append(b, `,"message":`...)
	b = strconv.AppendQuote(b, e.Message)
	if e.WaitMs > 0 {
		b = append(b, `,"waitMs":`...)
		b = strconv.AppendInt(b, e.WaitMs, 10)
	}
	if e.Field != "" {
		b = append(b, `,"field":`...)
		b = strconv.AppendQuote(b, e.Field)
	}
	b = append(b, "}}"...)
	c.Status(e.Status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(b)
}

// errorHandler turns any error into the JSON shape; it never shows
// internals.
func (s *server) errorHandler(c *fiber.Ctx, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return writeError(c, ae)
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return writeError(c, errorf(404, "not_found", "no such route"))
		case fiber.StatusMethodNotAllowed:
			return writeError(c, errorf(405, "method_not_allowed", "method not allowed on this route"))
		case fiber.StatusRequestEntityTooLarge:
			return writeError(c, errorf(413, "body_too_large", "request body is over 64 KiB"))
		case fiber.StatusRequestTimeout:
			return writeError(c, errorf(408, "timeout", "request timed out"))
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return writeError(c, errorf(fe.Code, "bad_request", "the request could not be read"))
		}
	}
	s.log.Error("request failed", "path", c.Path(), "err", err)
	return writeError(c, errorf(500, "internal", "internal error"))
}

// knownMethods answers a request whose method fiber does not know with
// the JSON error: fiber itself answers those with a plain-text 400 before
// any handler or the error handler runs.
func knownMethods(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	body := []byte(`{"error":{"code":"method_not_allowed","message":"method not allowed on this route"}}`)
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
