package visit

import (
	"context"
	"errors"

	"github.com/waitroom/waitroom/wire"
)

// ErrUnknownLanguage is PreviewPage's answer for a language the page does
// not come in.
var ErrUnknownLanguage = errors.New("visit: the page does not come in that language")

// Languages are the codes of the languages the waiting page comes in, the
// fallback (en) first.
func (a *API) Languages() []string {
	out := make([]string, len(a.langs.list))
	for i, l := range a.langs.list {
		out[i] = l.Code
	}
	return out
}

// PreviewPage renders room's waiting page (index.html, embedded or from
// Options.PageDir) as a visitor with language lang sees it in state st:
// the same HTML, words, branding and boot data as GET /?room=room, with st
// in the boot data as a preview, which the page shows instead of joining
// or connecting. It writes nothing: it only reads room's branding (from
// the room cache, else the store). An unknown lang is ErrUnknownLanguage.
func (a *API) PreviewPage(ctx context.Context, room, lang string, st wire.State) ([]byte, error) {
	i, ok := a.langs.byCode[lang]
	if !ok {
		return nil, ErrUnknownLanguage
	}
	html, err := a.pageFile("index.html")
	if err != nil {
		return nil, err
	}
	look, err := a.roomBrandingFor(ctx, room)
	if err != nil {
		return nil, err
	}
	st.Room = room
	boot := pageBoot{Lang: lang, Langs: a.langs.list, Text: a.langs.list[i].text, Orders: a.orders, Preview: st.AppendJSON(nil)}
	if look != (roomLook{}) {
		boot.Branding = &look
	}
	return bootPage(html, boot), nil
}
