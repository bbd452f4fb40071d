package pgtest

// PID returns the process id of the server's postmaster, the parent of
// every other process of the server (each session's backend included),
// or 0 while the server is stopped. Restart starts a new postmaster, with
// a new id. A caller accounting for the server's CPU time reads it from
// that process tree: the benchmark (internal/tools/bench) does.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}
