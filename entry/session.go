package entry

import (
	"crypto/sha256"
	"encoding/json"
	"time"
)

// SessionType is the typ of an edge session's header. Parse refuses it,
// so an edge session never passes for an entry token.
const SessionType = "wr-session+jwt"

// SessionAudience is an edge session's aud: no room can be named so, so a
// verifier that checks aud against a room refuses it too.
const SessionAudience = "waitroom:edge"

// Session is a gateway session as an edge checks it: signed with the
// entry tokens' key (its public half in the JWKS), short-lived, and bound
// to the visitor's credential by a hash, so an edge holds no secret that
// could make one and a copy is worth nothing without the credential.
type Session struct {
	Issuer     string    // iss
	Room       string    // wr_room
	Visitor    string    // sub
	NotBefore  time.Time // the entry's notBefore (wr_nbf_ms; nbf its second): with room and visitor it names the session
	ExpiresAt  time.Time // exp: when the edge stops taking it and asks waitroom again
	Credential string    // the visitor credential it is bound to; only its hash (wr_cred) is signed
}

// CredentialHash is what a session's wr_cred holds for credential: the
// first 16 bytes of its SHA-256, base64url without padding.
func CredentialHash(credential string) string {
	h := sha256.Sum256([]byte(credential))
	return b64.EncodeToString(h[:16])
}

type sessionPayload struct {
	Iss   string `json:"iss,omitempty"`
	Aud   string `json:"aud"`
	Sub   string `json:"sub"`
	Room  string `json:"wr_room"`
	Nbf   int64  `json:"nbf"`
	NbfMs int64  `json:"wr_nbf_ms"`
	Exp   int64  `json:"exp"`
	Iat   int64  `json:"iat"`
	Cred  string `json:"wr_cred"`
}

// SignSession returns s as a compact JWS of type SessionType, signed by
// the active key. exp is rounded down to the second, so it never outlives
// s.ExpiresAt.
func (ks *KeySet) SignSession(s Session) (string, error) {
	k := ks.active
	body, err := json.Marshal(sessionPayload{Iss: s.Issuer, Aud: SessionAudience, Sub: s.Visitor, Room: s.Room,
		Nbf: s.NotBefore.Unix(), NbfMs: s.NotBefore.UnixMilli(), Exp: s.ExpiresAt.Unix(), Iat: time.Now().Unix(),
		Cred: CredentialHash(s.Credential)})
	if err != nil {
		return "", err
	}
	head := `{"alg":"` + k.Alg + `","kid":"` + k.ID + `","typ":"` + SessionType + `"}`
	signing := b64.EncodeToString([]byte(head)) + "." + b64.EncodeToString(body)
	sig, err := sign(k, []byte(signing))
	if err != nil {
		return "", err
	}
	return signing + "." + b64.EncodeToString(sig), nil
}
