package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/internal/tiedproc"
)

// Deadlines of the server's processes.
const (
	initdbTimeout = 2 * time.Minute  // initdb, start to exit
	stopTimeout   = 30 * time.Second // fast shutdown, SIGINT to exit, before SIGKILL
	goneTimeout   = 10 * time.Second // kill: the postmaster stopping on SIGSTOP; its processes ending after SIGKILL
)

// process is a running postmaster, the leader of its own process group.
type process struct {
	cmd *exec.Cmd
	*tiedproc.Proc
}

// startProcess starts cmd as the owner, in its own process group, tied
// to this process (tiedproc.Start).
func (s *Server) startProcess(cmd *exec.Cmd) (*process, error) {
	cmd.Dir = s.dir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = s.owner.sysProcAttr()
	tp, err := tiedproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("pgtest: start %s: %w", cmd.Path, err)
	}
	return &process{cmd: cmd, Proc: tp}, nil
}

// initdb creates the data directory.
func (s *Server) initdb() error {
	cmd := exec.Command(s.bins.initdb, s.initdbArgs()...)
	out := new(bytes.Buffer) // one writer for both: exec calls Write from one goroutine at a time
	cmd.Stdout, cmd.Stderr = out, out
	p, err := s.startProcess(cmd)
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-time.After(initdbTimeout):
		_ = p.kill()
		return fmt.Errorf("pgtest: %s did not finish within %v:\n%s", cmd, initdbTimeout, out)
	}
	if p.Err() != nil {
		return fmt.Errorf("pgtest: %s: %w:\n%s", cmd, p.Err(), out)
	}
	return nil
}

// launch starts the postmaster on s.port and waits until it accepts
// connections; on failure it kills what it started and returns an error
// with the server's output, wrapping errPortInUse when the port was
// taken. The caller holds s.mu.
func (s *Server) launch() error {
	from := logSize(s.logPath())
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(s.bins.postgres, s.serverArgs()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := s.startProcess(cmd)
	if err != nil {
		return err
	}
	if err := s.waitReady(p, from); err != nil {
		return errors.Join(err, p.kill())
	}
	s.proc = p
	return nil
}

// stop sends SIGINT to the postmaster, which ends its children and then
// itself (a fast shutdown); kill after stopTimeout.
func (p *process) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.Done():
		return nil
	case <-time.After(stopTimeout):
	}
	return errors.Join(
		fmt.Errorf("pgtest: the server did not stop within %v of SIGINT; killed", stopTimeout),
		p.kill())
}

// kill ends the postmaster and every process below it with SIGKILL and
// waits until they are gone. The postmaster is stopped first (SIGSTOP),
// so that it forks no process while its children are looked up; they
// are killed before it, while it cannot reap them, so that their pids
// cannot be reused before the signal.
func (p *process) kill() error {
	select {
	case <-p.Done(): // reaped: its pid may belong to another process now
		return nil
	default:
	}
	pm := p.cmd.Process.Pid
	_ = syscall.Kill(pm, syscall.SIGSTOP)
	deadline := time.Now().Add(goneTimeout)
	for backoff := time.Millisecond; !stopped(pm) && time.Now().Before(deadline); backoff = min(2*backoff, 50*time.Millisecond) {
		time.Sleep(backoff)
	}
	tree := descendants(pm)
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pm, syscall.SIGKILL) // the postmaster's group: it, and anything that did not setsid
	<-p.Done()
	return waitGone(tree)
}

// waitGone returns once none of pids runs, or an error after goneTimeout.
func waitGone(pids []int) error {
	deadline := time.Now().Add(goneTimeout)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		live := alive(pids)
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: the server's processes %v still run %v after SIGKILL", live, goneTimeout)
		}
		time.Sleep(backoff)
	}
}
