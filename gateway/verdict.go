package gateway

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// sessionCookie builds a session cookie (maxAge < 0 clears it): HttpOnly,
// SameSite=Lax, Secure when the visitor came over https.
func sessionCookie(name, value string, maxAge int, proto string) *fasthttp.Cookie {
	ck := fasthttp.AcquireCookie()
	ck.SetKey(name)
	ck.SetValue(value)
	ck.SetPath("/")
	ck.SetHTTPOnly(true)
	ck.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	ck.SetSecure(proto == "https")
	if maxAge < 0 {
		ck.SetExpire(fasthttp.CookieExpireDelete)
	} else {
		ck.SetMaxAge(maxAge)
	}
	return ck
}

// writeVerdict writes v's headers (and, for a denial, its status and body)
// on a response.
func writeVerdict(resp *fasthttp.Response, v *verdict) {
	if v.pass && (v.newVisitor != nil || v.sessionValue != "") {
		// A session made on the spot: no cache may keep this response.
		resp.Header.Set(fiber.HeaderCacheControl, "no-store")
	}
	if v.cookie != nil {
		resp.Header.SetCookie(v.cookie)
		fasthttp.ReleaseCookie(v.cookie)
		v.cookie = nil
	}
	if v.newVisitor != nil {
		resp.Header.SetCookie(v.newVisitor)
		fasthttp.ReleaseCookie(v.newVisitor)
		v.newVisitor = nil
	}
	if v.sessionValue != "" {
		resp.Header.Set(SessionHeader, v.sessionValue)
	}
	if v.credential != "" {
		resp.Header.Set("X-Visitor", v.credential)
	}
	if v.pass {
		return
	}
	resp.Header.Set(fiber.HeaderCacheControl, "no-store")
	if v.retry > 0 {
		resp.Header.Set(fiber.HeaderRetryAfter, strconv.Itoa(v.retry))
	}
	if v.room != "" {
		resp.Header.Set("X-Waitroom-Room", v.room)
	}
	if v.location != "" {
		resp.Header.Set(fiber.HeaderLocation, v.location)
	}
	resp.SetStatusCode(v.status)
	switch {
	case v.body != nil:
		resp.Header.SetContentType(v.ctype)
		resp.SetBody(v.body)
	case v.errorCode != "" && v.page:
		resp.Header.SetContentType(fiber.MIMETextHTMLCharsetUTF8)
		resp.SetBodyString(`<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
			`<title>` + verdictTitles[v.errorCode] + `</title><body style="font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:15vh auto;padding:0 1rem">` +
			`<h1>` + verdictTitles[v.errorCode] + `</h1><p>` + verdictMessages[v.errorCode] + `.</p>` +
			`<p data-code="` + v.errorCode + `"><a href="/">Home</a></p></body></html>`)
	case v.errorCode != "":
		resp.Header.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		resp.SetBodyString(`{"error":{"code":"` + v.errorCode + `","message":"` + verdictMessages[v.errorCode] + `"}}`)
	}
}

var verdictMessages = map[string]string{
	"unavailable":    "the queue store is unreachable; retry shortly",
	"invalid_path":   "the request path has an encoded slash, a backslash, a control character, an invalid escape or a .. above the root",
	"unknown_host":   "this gateway serves no site under the requested host name",
	"room_not_found": "the waiting room that guards this address does not exist; the site's operator has to create it or change the route",
}

// verdictTitles head the page a browser gets instead of the JSON.
var verdictTitles = map[string]string{
	"invalid_path":   "Bad address",
	"unknown_host":   "Unknown site",
	"room_not_found": "Temporarily unavailable",
}
