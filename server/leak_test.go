package main

import (
	"testing"

	"go.uber.org/goleak"
)

// Every push connection, hub goroutine and Redis client must be gone when
// the tests' servers have shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide date updater, started once.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// fasthttp's idle-worker cleaner sleeps up to 10 s before it sees
		// the stop signal of a server that has shut down.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		// The gateway proxy's client: its idle-connection cleaner ends at
		// its next wake-up (up to 30 s) once the pool is empty.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		// rueidis closes the node connections a cluster topology refresh
		// replaced 5 s later, from a goroutine its Close does not wait for.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	)
}
