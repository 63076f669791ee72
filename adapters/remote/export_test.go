package remote

// Idle reports whether no request is open and every body's bytes are
// given back. A client has its answer before the handler that wrote it
// returns, and the slot and the bytes are given back only then, so a test
// that counts on them waits for Idle first.
func (s *Server) Idle() bool {
	if len(s.open) != 0 || !s.held.TryAcquire(s.opts.Limits.HeldBytes) {
		return false
	}
	s.held.Release(s.opts.Limits.HeldBytes)
	return true
}
