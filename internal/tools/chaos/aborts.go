package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// In exactly-once mode, pipeline.Run stops with an error wrapping
// exactlyonce.ErrAborted when a transaction is aborted (a partition lost
// with records in it, a failed commit), and cmd/example exits 1 printing
// it. That is the documented way to recover (docs/exactly-once.md,
// "Aborts": restart the process, as after a crash), so the suite restarts
// such a process like a deployment would and reports it, without counting
// it as a violation. Any other exit nobody asked for stays a violation.

// abortedOnItsOwn reports whether p, in exactly-once mode, exited non-zero
// before anybody signalled it with exactlyonce.ErrAborted in its log, and
// returns that log line.
func (s *scenario) abortedOnItsOwn(p *proc) (string, bool) {
	if !s.set.exactlyOnce {
		return "", false
	}
	select {
	case <-p.done:
	default:
		return "", false
	}
	if p.exitedCleanly() {
		return "", false
	}
	if sig, at := p.signalledWith(); sig != 0 && !p.exitedAt().Before(at) {
		return "", false
	}
	return p.logLine(exactlyonce.ErrAborted.Error())
}

// noteAbort reports p's exit on ErrAborted (abortedOnItsOwn) in the
// result and the progress output, and removes p from the live
// processes; the caller restarts its slot.
func (s *scenario) noteAbort(p *proc, line string) {
	delete(s.live, p.slot)
	line = abortCause(line)
	what := p.name + " " + p.exit() + " " + p.exitedAt().Sub(p.started).Round(time.Millisecond).String() +
		" after it started, at " + p.exitedAt().Sub(s.began).Round(100*time.Millisecond).String() + ": " + line
	s.res.aborts = append(s.res.aborts, what)
	s.logf("ABORTED (restarted, not a violation until Run rewinds in place): %s", what)
}

// restartAborted restarts, as a new incarnation, every live process that
// exited on ErrAborted (abortedOnItsOwn), and returns how many it
// restarted. The waits for the group (recovered, finish) call it at every
// look, so that such an exit is a restart in the middle of the step, not
// a recovery that never comes.
func (s *scenario) restartAborted() int {
	n := 0
	for _, p := range s.liveProcs() {
		line, ok := s.abortedOnItsOwn(p)
		if !ok {
			continue
		}
		s.noteAbort(p, line)
		if err := s.start(p.slot); err != nil {
			s.violate("restarting %s after its abort: %v", p.name, err)
			continue
		}
		n++
	}
	return n
}

// offsetList matches the offsets an abort message lists, e.g.
// "[{{events 5} 165} {{events 6} 165}]".
var offsetList = regexp.MustCompile(`\[(\{\{[^]]*)\]`)

// abortCause shortens the log line of an abort to its err= part (its
// whole text when it has none), with the lists of offsets left out, in at
// most 400 bytes.
func abortCause(line string) string {
	if _, err, ok := strings.Cut(line, " err="); ok {
		line = err
	}
	line = offsetList.ReplaceAllString(line, "[...]")
	if len(line) > 400 {
		line = line[:400] + "..."
	}
	return line
}

// rewoundLog is what the exactly-once Group logs when it aborted a
// transaction and rewound the partitions in place (Run goes on).
const rewoundLog = "exactly-once transaction aborted; partitions rewound"

// logLine returns the first line of p's log that contains sub.
func (p *proc) logLine(sub string) (string, bool) {
	var found string
	ok := p.scanLog(func(line string) bool {
		if strings.Contains(line, sub) {
			found = line
			return false
		}
		return true
	})
	return found, ok && found != ""
}

// countLines returns how many lines of p's log contain sub.
func (p *proc) countLines(sub string) int {
	n := 0
	p.scanLog(func(line string) bool {
		if strings.Contains(line, sub) {
			n++
		}
		return true
	})
	return n
}

// scanLog calls each with every line of p's log until it returns false;
// it reports whether the log could be read.
func (p *proc) scanLog(each func(line string) bool) bool {
	f, err := os.Open(p.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !each(sc.Text()) {
			break
		}
	}
	return true
}
