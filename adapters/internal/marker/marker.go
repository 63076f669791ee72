// Package marker is the operator's cancel marker, shared by the filesystem
// adapters: a path resolved through the workspace's own PathResolver, so it
// follows the same containment as every other operator path.
package marker

import (
	"context"
	"errors"

	"github.com/metricproof/metricproof/ports"
)

// Marker is a ports.Canceller: the call is cancelled when anything exists
// where Path resolves. An empty Path never cancels.
type Marker struct {
	Paths ports.PathResolver
	Path  string
}

var _ ports.Canceller = Marker{}

// Cancelled implements ports.Canceller; a path leaving the workspace is
// ports.ErrOutside.
func (m Marker) Cancelled(context.Context) (bool, error) {
	if m.Path == "" {
		return false, nil
	}
	loc, err := m.Paths.Resolve(m.Path)
	if errors.Is(err, ports.ErrNotDir) {
		return false, nil // a file in the way: the marker cannot exist
	}
	return loc.Exists, err
}
