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
	b := appendString([]byte(`{"type":"message","room":`), room)
	b = append(b, `,"text":`...)
	b = appendString(b, text)
	return append(b, '}')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}
