package pgtest

import "testing"

// Stop shuts the server down with a fast shutdown (SIGINT: open
// transactions are rolled back and sessions ended) and returns once every
// process of the server is gone; SIGKILL ends them when that takes longer
// than 30 s, and the error says so. The data directory stays, for
// Restart. Stop on a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Kill ends every process of the server with SIGKILL, as a crash would,
// and returns once they are gone. The data directory stays: Restart then
// recovers from the write-ahead log, keeping every committed transaction.
// Kill on a stopped server does nothing.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	s.proc = nil
	if p == nil {
		return nil
	}
	return p.kill()
}

// Restart stops the server if it runs (as Stop does) and starts it again
// on the same port and data directory, returning once it accepts
// connections; it fails the test when either fails. DSNs and pools made
// before stay valid: a pool's connection to the old server fails when it
// is next used, and the pool then replaces it.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(); err != nil {
		tb.Fatalf("pgtest: restart: %v", err)
	}
	if err := s.launch(); err != nil {
		tb.Fatalf("pgtest: restart on %s: %v", s.Addr(), err)
	}
}

// running reports whether the server was started and not stopped since.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// stopLocked is Stop with s.mu held.
func (s *Server) stopLocked() error {
	p := s.proc
	s.proc = nil
	if p == nil {
		return nil
	}
	return p.stop()
}
