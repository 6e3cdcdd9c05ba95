package visit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// bootOf decodes the boot data of a rendered page.
func bootOf(t *testing.T, page []byte) map[string]json.RawMessage {
	t.Helper()
	m := regexp.MustCompile(`<script type="application/json" id="waitroom-boot">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no boot data in %s", page)
	}
	var boot map[string]json.RawMessage
	if err := json.Unmarshal(m[1], &boot); err != nil {
		t.Fatalf("boot data %s: %v", m[1], err)
	}
	return boot
}

// TestPreviewPage: a preview is the page a visitor gets (language, words,
// branding) with the made-up state in the boot data, for the room named,
// and nothing joined or read of the queue.
func TestPreviewPage(t *testing.T) {
	f := newFixture(t, nil)
	st := wire.State{Status: wire.StatusWaiting, Position: 42, ETASeconds: 300, ETARange: wire.Range{Low: 240, High: 360},
		NextPoll: 5 * time.Second, Message: "Doors at 10 </script>"}
	page, err := f.api.PreviewPage(context.Background(), "shop", "fr", st)
	if err != nil {
		t.Fatal(err)
	}
	visitor := f.do("GET", "/?room=shop", "", "Accept-Language", "fr")
	got, want := bootOf(t, page), bootOf(t, []byte(visitor.Raw))
	for _, k := range []string{"lang", "langs", "text", "branding"} {
		if string(got[k]) != string(want[k]) {
			t.Errorf("%s: preview %s, visitor %s", k, got[k], want[k])
		}
	}
	var pv struct {
		Room, Status, Message string
		Position              int64
		ETARange              struct{ Low, High int64 }
	}
	if err := json.Unmarshal(got["preview"], &pv); err != nil {
		t.Fatalf("preview %s: %v", got["preview"], err)
	}
	if pv.Room != "shop" || pv.Status != "waiting" || pv.Position != 42 || pv.ETARange.High != 360 || pv.Message != st.Message {
		t.Fatalf("preview state %s", got["preview"])
	}
	if bytes.Contains(page, []byte("Doors at 10 </script>")) {
		t.Fatal("the message is not escaped inside the boot script")
	}
	if len(f.q.joins) != 0 || f.q.statuses != 0 {
		t.Fatalf("a preview joined %v or read %d states", f.q.joins, f.q.statuses)
	}

	if _, err := f.api.PreviewPage(context.Background(), "shop", "xx", st); !errors.Is(err, ErrUnknownLanguage) {
		t.Fatalf("unknown language: %v", err)
	}
	if ls := f.api.Languages(); len(ls) != 7 || ls[0] != "en" {
		t.Fatalf("languages %v", ls)
	}
}
