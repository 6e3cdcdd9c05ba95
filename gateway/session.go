package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidSession is a session cookie that is malformed, forged or
// signed with another secret.
var ErrInvalidSession = errors.New("invalid session")

// Session is what a gateway session cookie holds: the admitted visitor of
// a room, the entry token's notBefore (which names the token record in
// Redis), the idle expiry as of the last slide, and when that slide was.
type Session struct {
	Room      string
	Visitor   string
	NotBefore time.Time
	ExpiresAt time.Time
	SlidAt    time.Time
}

// Key names the session in the revocation cache and the slide throttle.
func (s Session) Key() string {
	return s.Room + "|" + s.Visitor + "|" + strconv.FormatInt(s.NotBefore.UnixMilli(), 36)
}

// Signer signs and checks session cookies. Safe for concurrent use.
type Signer struct{ key []byte }

// NewSigner derives the session key from the deployment secret, so a
// session cookie can never pass for an entry token or a visitor credential.
func NewSigner(secret []byte) *Signer {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom gateway session key"))
	return &Signer{key: m.Sum(nil)}
}

var b64 = base64.RawURLEncoding

func (g *Signer) sig(body string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte(body))
	return b64.EncodeToString(m.Sum(nil)[:16])
}

// Sign encodes s as "g1.room.visitor.nb.exp.slid.sig" (times in base-36
// Unix ms).
func (g *Signer) Sign(s Session) string {
	b := make([]byte, 0, 128)
	b = append(b, "g1."...)
	b = append(b, s.Room...)
	b = append(b, '.')
	b = append(b, s.Visitor...)
	for _, t := range []time.Time{s.NotBefore, s.ExpiresAt, s.SlidAt} {
		b = append(b, '.')
		b = strconv.AppendInt(b, t.UnixMilli(), 36)
	}
	body := string(b)
	return body + "." + g.sig(body)
}

// Parse checks a cookie's signature and returns its session. It does not
// check time or revocation.
func (g *Signer) Parse(v string) (Session, error) {
	if len(v) > 400 {
		return Session{}, ErrInvalidSession
	}
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return Session{}, ErrInvalidSession
	}
	body, sig := v[:i], v[i+1:]
	p := strings.Split(body, ".")
	if len(p) != 6 || p[0] != "g1" || !hmac.Equal([]byte(g.sig(body)), []byte(sig)) {
		return Session{}, ErrInvalidSession
	}
	var ts [3]int64
	for j := range ts {
		n, err := strconv.ParseInt(p[3+j], 36, 64)
		if err != nil {
			return Session{}, ErrInvalidSession
		}
		ts[j] = n
	}
	if !roomRE.MatchString(p[1]) || p[2] == "" || ts[1] <= ts[0] {
		return Session{}, ErrInvalidSession
	}
	return Session{Room: p[1], Visitor: p[2], NotBefore: time.UnixMilli(ts[0]),
		ExpiresAt: time.UnixMilli(ts[1]), SlidAt: time.UnixMilli(ts[2])}, nil
}

// SessionCookie is the default session cookie name of room. Each room has
// its own, so a visitor holds a session in several rooms at once (one
// shared name would hold one session, and visiting another room's path
// would replace or clear it).
func SessionCookie(room string) string { return "wr_session_" + room }

// NameCookies gives every route its room's one session cookie: the name
// that one of the room's routes writes (cookie:), else SessionCookie of the
// room. It refuses a room whose routes write two names, and a name given
// to two rooms. Parse calls it; call it again after adding routes.
func (c *Config) NameCookies() error {
	_, err := c.nameCookies()
	return err
}

// nameCookies is NameCookies; on error it also returns the index of the
// route at fault.
func (c *Config) nameCookies() (int, error) {
	named := map[string]int{} // room -> index of the route that wrote its name
	for i, r := range c.Routes {
		if !r.cookieSet {
			continue
		}
		if j, ok := named[r.Room]; ok && c.Routes[j].Cookie != r.Cookie {
			return i, fmt.Errorf("cookie %q: room %q already has the session cookie %q; a room has one", r.Cookie, r.Room, c.Routes[j].Cookie)
		}
		named[r.Room] = i
	}
	owner := map[string]string{} // cookie -> room
	for i := range c.Routes {
		r := &c.Routes[i]
		if j, ok := named[r.Room]; ok {
			r.Cookie = c.Routes[j].Cookie
		} else {
			r.Cookie = SessionCookie(r.Room)
		}
		if room, ok := owner[r.Cookie]; ok && room != r.Room {
			return i, fmt.Errorf("cookie %q: already the session cookie of room %q; each room needs its own, or a visit to one would end the session of the other", r.Cookie, room)
		}
		owner[r.Cookie] = r.Room
	}
	return 0, nil
}
