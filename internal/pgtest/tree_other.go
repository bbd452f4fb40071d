//go:build !linux

package pgtest

// descendants finds no processes without Linux's /proc: kill then ends
// the postmaster only, and its children end themselves when they see it
// gone, as PostgreSQL's processes do.
func descendants(int) []int { return nil }

// alive returns pids: descendants finds none without /proc.
func alive(pids []int) []int { return pids }

// stopped reports true: without /proc, kill has no children to look for
// and no reason to wait for the postmaster to stop.
func stopped(int) bool { return true }
