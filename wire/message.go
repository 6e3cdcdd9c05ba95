package wire

import "encoding/json"

// EventMessage says the operator's message to the room's waiting visitors
// changed; Event.Text is the new message ("" = cleared) and Event.Version
// the settings version that holds it, so an older read never undoes it.
const EventMessage EventType = "message"

// MessageFrame is the pushed message that shows (or, with text "", clears)
// the operator's message: {"type":"message","room":…,"text":…}. WebSocket
// sends it as a text frame, SSE as "event: message".
func MessageFrame(room, text string) []byte {
	b := AppendString([]byte(`{"type":"message","room":`), room)
	b = append(b, `,"text":`...)
	b = AppendString(b, text)
	return append(b, '}')
}

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it. The strings of a hot path (room names, credentials, tokens)
// need no escaping, and are appended as they are, between quotes.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
