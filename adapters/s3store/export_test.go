package s3store

import "time"

// SetTimeout bounds each request of s by d, so that a test of a store
// that never answers ends soon.
func SetTimeout(s *Store, d time.Duration) { s.timeout = d }
