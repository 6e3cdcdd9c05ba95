package visit

import (
	"testing"

	"go.uber.org/goleak"
)

// Nothing the API starts outlives a test: it owns no goroutine but Run's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide date updater, started once.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	)
}
