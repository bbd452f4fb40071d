// Package tiedproc starts child processes that do not outlive the process
// that started them (on Linux), for the test servers of pgtest and the
// tools that run brokers and databases: a test binary killed by a
// timeout or a signal leaves no server behind.
package tiedproc

import "os/exec"

// Proc is a child process started with [Start].
type Proc struct {
	done chan struct{}
	err  error
}

// Done is closed once the process was reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is what cmd.Wait returned; it is nil until Done is closed.
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Run is cmd.Run for a process started with [Start]: it returns once the
// process was reaped, with what Wait returned.
func Run(cmd *exec.Cmd) error {
	p, err := Start(cmd)
	if err != nil {
		return err
	}
	<-p.done
	return p.err
}
