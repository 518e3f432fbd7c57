package degrade

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a Sampler.Run goroutine outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
