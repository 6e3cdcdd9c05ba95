// Command drawcheck recomputes a room's pre-queue draw from what the
// server revealed, so anyone can check it: that the seed matches the
// commitment published before opening, and the whole order (or one
// visitor's place) that follows from the seed and the list of ids.
//
//	go run ./cmd/drawcheck -url https://host/api/v1/rooms/drop/draw [-visitor ID] [-print] [-save draw.json]
//	go run ./cmd/drawcheck -file draw.json [-visitor ID] [-print]
//
// With -lottery it replays a room's lottery (method random) instead, from
// the revealed seed and the lottery's log (lottery.go): every pick's n,
// rank and ticket; -visitor then takes a ticket number or a credential.
//
//	go run ./cmd/drawcheck -lottery -url https://host/api/v1/rooms/drop/lottery [-visitor CREDENTIAL] [-save lottery.json]
//	go run ./cmd/drawcheck -lottery -file lottery.json
//
// The function (also in docs/draw-and-lottery.md): commitment = hex(SHA-256(seed));
// order = ids sorted by hex(SHA-1(seed + ":" + id)) ascending, then by id;
// the i-th in that order got the i-th place. It is written here on its own,
// with nothing imported from the server, so the check does not rest on the
// code it checks.
package main

import (
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// reveal is the draw endpoint's answer (all pages merged).
type reveal struct {
	Room       string   `json:"room"`
	State      string   `json:"state"`
	Commitment string   `json:"commitment"`
	Seed       string   `json:"seed"`
	OpenedAt   string   `json:"openedAt"`
	Count      int      `json:"count"`
	IDs        []string `json:"ids"`
	NextOffset *int     `json:"nextOffset,omitempty"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "drawcheck:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("drawcheck", flag.ContinueOnError)
	u := fs.String("url", "", "the room's draw endpoint, e.g. http://127.0.0.1:8080/api/v1/rooms/drop/draw")
	file := fs.String("file", "", "a saved reveal (JSON, as -save writes it) instead of -url")
	visitor := fs.String("visitor", "", "print this visitor's place (an id, or a credential: the part before the dot)")
	printAll := fs.Bool("print", false, "print the whole order, one id per line")
	save := fs.String("save", "", "with -url: write the reveal to this file, for checking offline later")
	lottery := fs.Bool("lottery", false, "check a lottery (method random): -url is the room's lottery endpoint, e.g. http://127.0.0.1:8080/api/v1/rooms/drop/lottery")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *lottery {
		return runLottery(*u, *file, *save, *visitor, out)
	}
	var r reveal
	var err error
	switch {
	case *u != "" && *file == "":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err = fetch(ctx, *u)
	case *file != "" && *u == "":
		r, err = load(*file)
	default:
		return errors.New("give -url or -file (one of them)")
	}
	if err != nil {
		return err
	}
	if *save != "" {
		b, _ := json.Marshal(r)
		if err := os.WriteFile(*save, b, 0o644); err != nil {
			return err
		}
	}
	order, err := check(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "room %s: commitment %s matches the seed; %d visitors drawn\n", r.Room, r.Commitment, len(order))
	if *visitor != "" {
		id, _, _ := strings.Cut(*visitor, ".")
		i := slices.Index(order, id)
		if i < 0 {
			return fmt.Errorf("visitor %s was not in the draw", id)
		}
		fmt.Fprintf(out, "visitor %s: place %d of %d\n", id, i+1, len(order))
	}
	if *printAll {
		for _, id := range order {
			fmt.Fprintln(out, id)
		}
	}
	return nil
}

// check verifies the commitment and returns the order.
func check(r reveal) ([]string, error) {
	if r.Seed == "" {
		return nil, fmt.Errorf("the seed is not revealed yet (state %q): the room has not opened", r.State)
	}
	if r.Commitment == "" {
		return nil, errors.New("this draw had no commitment published (the room opened without opensAt)")
	}
	sum := sha256.Sum256([]byte(r.Seed))
	if got := hex.EncodeToString(sum[:]); got != r.Commitment {
		return nil, fmt.Errorf("the seed does not match the commitment: SHA-256 is %s, published %s", got, r.Commitment)
	}
	if r.Count != len(r.IDs) {
		return nil, fmt.Errorf("the reveal lists %d ids of %d", len(r.IDs), r.Count)
	}
	if !slices.IsSorted(r.IDs) {
		return nil, errors.New("the revealed ids are not sorted")
	}
	return order(r.Seed, r.IDs), nil
}

// order is the draw function.
func order(seed string, ids []string) []string {
	type keyed struct{ key, id string }
	ks := make([]keyed, len(ids))
	for i, id := range ids {
		sum := sha1.Sum([]byte(seed + ":" + id))
		ks[i] = keyed{hex.EncodeToString(sum[:]), id}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.id, b.id)) })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out
}

// fetch reads every page of the reveal.
func fetch(ctx context.Context, endpoint string) (reveal, error) {
	base, err := url.Parse(endpoint)
	if err != nil {
		return reveal{}, err
	}
	var all reveal
	offset := 0
	for page := 0; ; page++ {
		if page > 10000 {
			return reveal{}, errors.New("too many pages")
		}
		u := *base
		q := u.Query()
		q.Set("offset", strconv.Itoa(offset))
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
		if err != nil {
			return reveal{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return reveal{}, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return reveal{}, err
		}
		if resp.StatusCode != 200 {
			return reveal{}, fmt.Errorf("GET %s: http %d: %s", u.String(), resp.StatusCode, strings.TrimSpace(string(body)))
		}
		var r reveal
		if err := json.Unmarshal(body, &r); err != nil {
			return reveal{}, fmt.Errorf("GET %s: %w", u.String(), err)
		}
		if page == 0 {
			all = r
			all.IDs = nil
		} else if r.Seed != all.Seed || r.Count != all.Count {
			return reveal{}, errors.New("the draw changed between pages")
		}
		all.IDs = append(all.IDs, r.IDs...)
		if r.NextOffset == nil {
			all.NextOffset = nil
			return all, nil
		}
		offset = *r.NextOffset
	}
}

func load(path string) (reveal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return reveal{}, err
	}
	var r reveal
	if err := json.Unmarshal(b, &r); err != nil {
		return reveal{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
