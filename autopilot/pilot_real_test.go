//go:build integration

package autopilot

import (
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
)

// TestOneDecisionPerSecond is testOneDecisionPerSecond on a real
// redis-server: three instances, one decision per room per second.
func TestOneDecisionPerSecond(t *testing.T) { testOneDecisionPerSecond(t, redistest.StartReal(t)) }

// TestOffHolds is testOffHolds on a real redis-server.
func TestOffHolds(t *testing.T) { testOffHolds(t, redistest.StartReal(t)) }
