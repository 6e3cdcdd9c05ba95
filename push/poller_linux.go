package push

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/waitroom/waitroom/internal/workpool"
)

// A push connection has nothing to do on its read side until its client
// sends something (a WebSocket close, pong or ping; for SSE only the end
// of the stream), which a waiting page does seldom. Rather than a
// goroutine per connection parked until then (a stack of at least 2 KiB
// that the collector scans at every cycle, a third of what an idle
// connection cost), the connections wait in one epoll set served by one
// goroutine; a readable connection is read on a pooled reader and then
// waits in the set again.

// poller is the epoll set of the waiting push connections.
type poller struct {
	epfd int
	// file is epfd as a file of Go's own poller: the loop waits for the
	// set to have events by parking there, like any read, instead of in an
	// epoll_wait that would hold a thread.
	file    *os.File
	wakefd  int // an eventfd, written to stop the loop
	readers *workpool.Pool
	done    chan struct{}

	mu      sync.Mutex
	stopped bool
	next    uint64
	waits   map[uint64]*pollWait
}

// pollWait is one connection in the set.
type pollWait struct {
	p    *poller
	rc   syscall.RawConn
	read func() bool // reads what came; false once the connection is over
	end  func()

	// Guarded by p.mu.
	id       uint64 // the set's data for it; 0 is the stop signal
	finished bool
}

// newPoller starts an empty set whose connections are read on readers.
func newPoller(readers *workpool.Pool) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, err
	}
	// Non-blocking, so that os.NewFile hands it to Go's poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		unix.Close(wakefd)
		return nil, err
	}
	p := &poller{epfd: epfd, file: f, wakefd: wakefd, readers: readers, done: make(chan struct{}), waits: make(map[uint64]*pollWait)}
	go p.loop(rc)
	return p, nil
}

// prepare makes the wait of a connection without adding it to the set, so
// that whoever may close the connection can be handed it first: read is
// called on a reader whenever the connection has bytes (or an error, or
// the peer's end), end once: when read reports the end, when finish is
// called, or when the connection cannot wait in the set. end must close
// the socket. start adds it.
func (p *poller) prepare(rc syscall.RawConn, read func() bool, end func()) *pollWait {
	return &pollWait{p: p, rc: rc, read: read, end: end}
}

// start adds w to the set. From then on the connection belongs to the
// wait: if it cannot be added (the set is stopped, or the kernel refuses),
// or it was finished already, it is ended at once.
func (w *pollWait) start() {
	p := w.p
	p.mu.Lock()
	if w.finished {
		p.mu.Unlock()
		return
	}
	if p.stopped {
		p.mu.Unlock()
		w.finish()
		return
	}
	p.next++
	w.id = p.next
	p.waits[w.id] = w
	p.mu.Unlock()
	if err := w.arm(unix.EPOLL_CTL_ADD); err != nil {
		w.finish()
	}
}

// arm asks the set for one readiness event of the connection. It fails
// once the socket is closed (Control refuses a closed one), so a closed
// connection is never armed, nor its number, which the kernel may have
// given to another socket.
func (w *pollWait) arm(op int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT}
	w.p.mu.Lock()
	id := w.id
	w.p.mu.Unlock()
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
	var err error
	if cerr := w.rc.Control(func(fd uintptr) { err = unix.EpollCtl(w.p.epfd, op, int(fd), &ev) }); cerr != nil {
		return cerr
	}
	return err
}

// serve reads what came and waits again, or ends the connection.
func (w *pollWait) serve() {
	if w.read() && w.arm(unix.EPOLL_CTL_MOD) == nil {
		return
	}
	w.finish()
}

// finish ends w; only the first call does anything, and a call made from
// end (closing the connection closes its transport, which finishes its
// wait) returns at once. end closes the socket, which takes it out of the
// kernel's set (no descriptor of it is left), so no EPOLL_CTL_DEL is
// needed; an event that comes in between finds no wait under its id. A
// socket closed by anyone else leaves the set without an event too: whoever
// closes a waiting connection calls finish.
func (w *pollWait) finish() {
	p := w.p
	p.mu.Lock()
	if w.finished {
		p.mu.Unlock()
		return
	}
	w.finished = true
	delete(p.waits, w.id)
	p.mu.Unlock()
	w.end()
}

// loop hands each readable connection to a reader until stop. rc is the
// set as a file of Go's poller: a look that finds no event parks the loop
// there until the set has one.
func (p *poller) loop(rc syscall.RawConn) {
	defer close(p.done)
	evs := make([]unix.EpollEvent, 128)
	for {
		var n int
		var werr error
		err := rc.Read(func(fd uintptr) bool {
			n, werr = unix.EpollWait(int(fd), evs, 0)
			return n > 0 || (werr != nil && !errors.Is(werr, unix.EINTR))
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return
		}
		for _, ev := range evs[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if id == 0 {
				return
			}
			p.mu.Lock()
			w := p.waits[id]
			p.mu.Unlock()
			if w != nil && !p.readers.Go(w.serve) {
				w.finish()
			}
		}
	}
}

// len is how many connections wait in the set.
func (p *poller) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waits)
}

// stop ends the loop, then every connection still waiting; later starts
// end their connection at once.
func (p *poller) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(p.wakefd, one[:])
	<-p.done
	p.mu.Lock()
	left := make([]*pollWait, 0, len(p.waits))
	for _, w := range p.waits {
		left = append(left, w)
	}
	p.mu.Unlock()
	for _, w := range left {
		w.finish()
	}
	// Every connection that waited is closed now, and a connection that
	// starts after this is ended before it is armed: nothing uses epfd.
	p.file.Close()
	unix.Close(p.wakefd)
}
