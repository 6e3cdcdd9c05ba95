//go:build integration

package redisconn

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/redis/rueidis"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
)

// heldProxy passes one client's connections through to Redis and can hold
// Redis's replies back: while held, what the client writes still reaches
// Redis, and sent is signalled for every write.
type heldProxy struct {
	ln   net.Listener
	to   string
	sent chan struct{}

	mu    sync.Mutex
	held  bool
	open  chan struct{} // closed when the hold is released
	conns []net.Conn
	wg    sync.WaitGroup
}

func newHeldProxy(t *testing.T, to string) *heldProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &heldProxy{ln: ln, to: to, sent: make(chan struct{}, 64), open: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *heldProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, r)
		p.mu.Unlock()
		p.wg.Go(func() { p.up(c, r) })
		p.wg.Go(func() { p.down(r, c) })
	}
}

// up copies the client's writes to Redis, telling sent about each one
// made while replies are held.
func (p *heldProxy) up(c, r net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			p.mu.Unlock()
			if _, werr := r.Write(buf[:n]); werr != nil {
				return
			}
			if held {
				select {
				case p.sent <- struct{}{}:
				default:
				}
			}
		}
		if err != nil {
			r.Close()
			return
		}
	}
}

// down copies Redis's replies to the client, waiting while they are held.
func (p *heldProxy) down(r, c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			c.Close()
			return
		}
	}
}

func (p *heldProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	p.open = make(chan struct{})
}

func (p *heldProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		close(p.open)
	}
}

func (p *heldProxy) close() {
	p.release()
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestRueidisDeadlineSparesOthers: a call whose deadline passes while
// Redis is slow fails alone; a call made beside it on the same idle
// connection still gets its answer once Redis replies. Before the seam
// hid deadlines from rueidis, the first call's deadline closed the
// connection under the second, which is how a tick bounded by its
// interval failed a concurrent status read.
func TestRueidisDeadlineSparesOthers(t *testing.T) {
	for _, kind := range redistest.Kinds {
		t.Run(kind, func(t *testing.T) {
			srv := redistest.Start(t, kind)
			p := newHeldProxy(t, srv.Addr)
			c, err := rueidis.NewClient(rueidis.ClientOption{
				InitAddress: []string{p.ln.Addr().String()}, DisableCache: true,
				ForceSingleClient: true, AlwaysRESP2: kind == "mini",
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := NewRueidis(c)
			ctx := context.Background()
			if _, err := r.Do(ctx, "SET", "k", "v"); err != nil {
				t.Fatal(err)
			}

			p.hold()
			short := make(chan error, 1)
			go func() {
				sctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, err := r.Do(sctx, "GET", "k")
				short <- err
			}()
			select { // the short call is on the wire, its reply held
			case <-p.sent:
			case <-time.After(10 * time.Second):
				t.Fatal("the first call never reached Redis")
			}
			other := make(chan error, 1)
			var got any
			go func() {
				octx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				v, err := r.Do(octx, "GET", "k")
				got = v
				other <- err
			}()
			if err := <-short; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the short call: %v, want its deadline exceeded", err)
			}
			p.release()
			if err := <-other; err != nil {
				t.Fatalf("the call beside it failed: %v", err)
			}
			if got != "v" {
				t.Fatalf("the call beside it read %v, want v", got)
			}
		})
	}
}

// recordingClient is a rueidis client that keeps each command it is given.
type recordingClient struct {
	rueidis.Client
	mu   sync.Mutex
	cmds [][]string
}

func (c *recordingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.mu.Lock()
	c.cmds = append(c.cmds, slices.Clone(cmd.Commands())) // the headers: rueidis reuses the slice
	c.mu.Unlock()
	return c.Client.Do(ctx, cmd)
}

// TestRueidisCallsOwnTheirArgs: what the seam gives rueidis is its own
// copy of the arguments. A call whose caller gave up is written later,
// from rueidis's goroutine, and a caller's argument may be a request's
// buffer, reused once the request is answered.
func TestRueidisCallsOwnTheirArgs(t *testing.T) {
	srv := redistest.StartReal(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	rec := &recordingClient{Client: c}
	r := NewRueidis(rec)
	ctx := context.Background()
	buf := []byte("drop")
	room := unsafe.String(unsafe.SliceData(buf), len(buf))
	if _, err := r.Do(ctx, "SADD", "wr:test", room); err != nil {
		t.Fatal(err)
	}
	echo := rediscall.NewScript("echo", "return ARGV[1]")
	if v, err := r.Eval(ctx, echo, []string{"wr:test"}, room); err != nil || v != "drop" {
		t.Fatalf("eval: %v %v", v, err)
	}
	copy(buf, "zzzz")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var seen int
	for _, cmd := range rec.cmds {
		for _, arg := range cmd {
			if strings.Contains(arg, "zzzz") {
				t.Errorf("command %q holds the caller's buffer", cmd)
			}
			if arg == "drop" {
				seen++
			}
		}
	}
	// SADD, then EVALSHA, and EVAL when the script was not loaded yet.
	if seen < 2 || seen != len(rec.cmds) {
		t.Errorf("%d of the commands name the room, want all: %q", seen, rec.cmds)
	}
}
