package pgtest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// logSize is the size of the log file, 0 when it does not exist yet.
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readLog returns the last n lines of the log file from byte offset from.
func readLog(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logOnFailure logs the end of the server's log when tb has failed by the
// time its cleanups run.
func logOnFailure(tb testing.TB, s *Server) {
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("pgtest: the last lines of the server log (%s):\n%s", s.logPath(), readLog(s.logPath(), 0, 40))
		}
	})
}

// LogTail returns the last lines of the server's log (its output since
// initdb, across restarts), for a program that keeps it when something
// failed; tests get it logged on failure without asking.
func (s *Server) LogTail(lines int) string { return readLog(s.logPath(), 0, lines) }
