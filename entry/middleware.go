package entry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Cookie names the waitroom page sets.
const (
	TokenCookie   = "wr_token"
	VisitorCookie = "wr_visitor"
)

// MiddlewareOptions configure Middleware. Nil means the defaults.
type MiddlewareOptions struct {
	// Consumer, when set, spends each token at the server after it
	// verified offline: a token passes once. Nil only verifies.
	Consumer *Consumer
	// Token finds the request's token (default: Authorization: Bearer,
	// else the wr_token cookie).
	Token func(*http.Request) string
	// Visitor finds the visitor credential the token must come with
	// (default: X-Visitor, else the wr_visitor cookie). A request without
	// one is refused (401 missing_visitor), one whose credential names
	// another visitor than the token's sub too (403 wrong_visitor); the
	// Consumer sends it to the server, which checks its signature.
	Visitor func(*http.Request) string
	// AllowMissingVisitor lets a request without the visitor credential
	// pass on its token alone, for a backend that cannot forward the
	// credential (the page's cookie does not reach it, say). Anyone who
	// holds such a token can then use it: leave it false unless the
	// credential cannot be had. A credential that is sent is still
	// checked.
	AllowMissingVisitor bool
	// Error writes a refusal (default: a JSON error body with a stable
	// code, see WriteError).
	Error func(w http.ResponseWriter, r *http.Request, err error)
	// Health, when set, is told how long next took for each request that
	// passed and whether it answered below 500, under the token's room,
	// for the room's autopilot; it sends them in the background (run its
	// Run), so next is never slowed by it. Refused requests are not
	// counted: next did not serve them.
	Health *Reporter
}

type ctxKey struct{}

// FromContext returns the claims Middleware put in a request's context.
func FromContext(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(ctxKey{}).(Claims)
	return c, ok
}

// Middleware protects next: a request passes with a token v accepts, sent
// with the visitor credential it was issued to (unless
// AllowMissingVisitor), and, with a Consumer, that the server spends for
// it now; next finds the claims with FromContext. Others are refused with
// 401, 403, 409, 410 or 425, or 503 when the key set or the server cannot
// be reached.
//
// Without a Consumer the credential is only compared with the token's sub:
// its signature is the server's to check, so only consume proves that the
// request comes from the visitor.
func (v *Verifier) Middleware(next http.Handler, opts *MiddlewareOptions) http.Handler {
	var o MiddlewareOptions
	if opts != nil {
		o = *opts
	}
	if o.Token == nil {
		o.Token = requestToken
	}
	if o.Visitor == nil {
		o.Visitor = requestVisitor
	}
	if o.Error == nil {
		o.Error = func(w http.ResponseWriter, _ *http.Request, err error) { WriteError(w, err) }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := o.Token(r)
		if tok == "" {
			o.Error(w, r, errMissing)
			return
		}
		c, err := v.Verify(r.Context(), tok)
		if err != nil {
			o.Error(w, r, err)
			return
		}
		cred := o.Visitor(r)
		switch {
		case cred == "" && !o.AllowMissingVisitor:
			o.Error(w, r, errMissingVisitor)
			return
		case cred != "" && CredentialVisitor(cred) != c.Visitor:
			o.Error(w, r, errWrongVisitor)
			return
		}
		if o.Consumer != nil {
			if cred == "" {
				_, err = o.Consumer.ConsumeWithoutVisitor(r.Context(), tok)
			} else {
				_, err = o.Consumer.Consume(r.Context(), tok, cred)
			}
			if err != nil {
				o.Error(w, r, err)
				return
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, c))
		if o.Health != nil {
			serveReported(o.Health, c.Room, next, w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var (
	errMissing        = &APIError{Status: 401, Code: "missing_token", Message: "an entry token is required (Authorization: Bearer)"}
	errMissingVisitor = &APIError{Status: 401, Code: "missing_visitor", Message: "the entry token must come with the visitor credential it was issued to (cookie wr_visitor or X-Visitor)"}
	errWrongVisitor   = &APIError{Status: 403, Code: "wrong_visitor", Message: "the entry token belongs to another visitor"}
)

// CredentialVisitor is the visitor id a visitor credential names (its part
// before the first "."): the sub of the tokens issued to it. Only the
// server can tell a credential it issued from a forged one.
func CredentialVisitor(credential string) string {
	id, _, _ := strings.Cut(credential, ".")
	return id
}

func requestToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		t, _ := strings.CutPrefix(h, "Bearer ")
		return strings.TrimSpace(t)
	}
	if c, err := r.Cookie(TokenCookie); err == nil {
		return c.Value
	}
	return ""
}

func requestVisitor(r *http.Request) string {
	if h := r.Header.Get("X-Visitor"); h != "" {
		return h
	}
	if c, err := r.Cookie(VisitorCookie); err == nil {
		return c.Value
	}
	return ""
}

// WriteError writes err as the waitroom's JSON error shape,
// {"error":{"code":…,"message":…}}: a server's refusal as it came, a
// failed offline check as 401 invalid_token (403 wrong_room for another
// room's token, 425 too_early before its notBefore, 410 token_expired
// after its cap), anything else as 503 unavailable.
func WriteError(w http.ResponseWriter, err error) {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, ErrWrongAudience):
		ae = &APIError{Status: 403, Code: "wrong_room", Message: "the entry token is for another room"}
	case errors.Is(err, ErrNotYetValid):
		ae = &APIError{Status: 425, Code: "too_early", Message: "the entry token is not valid yet"}
	case errors.Is(err, ErrExpired):
		ae = &APIError{Status: 410, Code: "token_expired", Message: "the entry token has expired"}
	case errors.Is(err, ErrInvalid):
		ae = &APIError{Status: 401, Code: "invalid_token", Message: err.Error()}
	default:
		ae = &APIError{Status: 503, Code: "unavailable", Message: "the entry token cannot be checked now"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if ae.WaitMs > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((ae.WaitMs+999)/1000, 10))
	}
	w.WriteHeader(ae.Status)
	// JSON strings, not Go's quoting: a message may carry a token's or the
	// server's bytes, and Go's \x escapes are not JSON.
	code, _ := json.Marshal(ae.Code)
	msg, _ := json.Marshal(ae.Message)
	b := append([]byte(`{"error":{"code":`), code...)
	b = append(b, `,"message":`...)
	b = append(b, msg...)
	if ae.WaitMs > 0 {
		b = append(b, `,"waitMs":`...)
		b = strconv.AppendInt(b, ae.WaitMs, 10)
	}
	b = append(b, "}}"...)
	w.Write(b)
}
