package main

import (
	"github.com/waitroom/waitroom/settings"
)

// restoreSettings says what a room's settings are when Redis lost them:
// the settings this instance last read, with what the rooms file (-rooms)
// sets on top, as every other write of a room's settings applies it.
type restoreSettings struct{ s *server }

func (r restoreSettings) RoomSettings(room string) (settings.Room, bool) {
	var c settings.Room
	var ok bool
	if r.s.rooms != nil {
		c, ok = r.s.rooms.RoomSettings(room)
	}
	if fr, found := r.s.fileRoom(room); found {
		fr.Apply(&c)
		ok = true
	}
	return c, ok
}

func (r restoreSettings) SettingsRooms() []string {
	var out []string
	if r.s.rooms != nil {
		out = r.s.rooms.SettingsRooms()
	}
	for _, fr := range r.s.opsNow().Rooms.Rooms() {
		out = append(out, fr.Name)
	}
	return out
}
