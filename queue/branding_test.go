package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// A room's branding is stored and read back as set; clearing a field
// removes it. (The parity suite reads branding back on every Redis and
// client.)
func TestRoomBrandingStored(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		want := settings.Room{
			BrandTitle: "Acme Drop · 東京", BrandLogo: "https://cdn.example/logo.svg", BrandAccent: "#c2185b",
			BrandBackground: "#fff8e1", BrandFooter: `<p>© Acme · <a href="https://acme.example/terms">Terms</a></p>`,
		}
		if err := q.SetRoomConfig(ctx, "brand", want); err != nil {
			t.Fatal(err)
		}
		got, err := q.RoomConfig(ctx, "brand")
		if err != nil {
			t.Fatal(err)
		}
		if got.BrandTitle != want.BrandTitle || got.BrandLogo != want.BrandLogo || got.BrandAccent != want.BrandAccent ||
			got.BrandBackground != want.BrandBackground || got.BrandFooter != want.BrandFooter {
			t.Fatalf("read back %+v", got)
		}
		if err := q.SetRoomConfig(ctx, "brand", settings.Room{BrandAccent: "#000"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := q.RoomConfig(ctx, "brand"); got.BrandTitle != "" || got.BrandFooter != "" || got.BrandAccent != "#000" {
			t.Fatalf("after clearing: %+v", got)
		}
	})
}

func TestRoomBrandingValidate(t *testing.T) {
	for _, tc := range []struct {
		c     settings.Room
		field string
	}{
		{settings.Room{BrandTitle: "two\nlines"}, "brandTitle"},
		{settings.Room{BrandTitle: strings.Repeat("x", 81)}, "brandTitle"},
		{settings.Room{BrandLogo: "javascript:alert(1)"}, "brandLogo"},
		{settings.Room{BrandAccent: "red"}, "brandAccent"},
		{settings.Room{BrandBackground: "url(x)"}, "brandBackground"},
		{settings.Room{BrandFooter: strings.Repeat("x", 4001)}, "brandFooter"},
	} {
		var fe *settings.FieldError
		if err := tc.c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want field %s", tc.c, err, tc.field)
		}
	}
	ok := settings.Room{BrandTitle: "Shop", BrandLogo: "/logo.png", BrandAccent: "#abc", BrandBackground: "https://cdn.example/bg.jpg", BrandFooter: "<b>hi</b>"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
