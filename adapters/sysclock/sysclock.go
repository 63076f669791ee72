// Package sysclock adapts the system clock to ports.Clock.
package sysclock

import (
	"time"

	"github.com/metricproof/metricproof/ports"
)

// System is the system clock, in UTC.
type System struct{}

var _ ports.Clock = System{}

// Now returns the current UTC time.
func (System) Now() time.Time { return time.Now().UTC() }
