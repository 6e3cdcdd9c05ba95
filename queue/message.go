package queue

import "github.com/waitroom/waitroom/settings"

// MaxMessage is the most characters of a room's message to the waiting.
const MaxMessage = settings.MaxMessage

// CheckMessage reports why msg cannot be a room's message (see
// settings.CheckMessage).
func CheckMessage(msg string) error { return settings.CheckMessage(msg) }
