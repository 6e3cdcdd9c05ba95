package push

import (
	"testing"

	"go.uber.org/goleak"
)

// Every connection's goroutine, the epoll set's loop and the pooled
// readers must be gone when a test is over.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide date updater, started once.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// fasthttp's idle-worker cleaner sleeps up to 10 s before it sees
		// the stop signal of a server that has shut down.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}
