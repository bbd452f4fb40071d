package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one cmd/example process: incarnation inc of slot. Its name
// "p<slot>.<inc>" is also its librdkafka client.id, which is how the
// group's members are matched to processes.
type proc struct {
	slot, inc int
	name      string
	pid       int
	started   time.Time
	logPath   string

	done chan struct{} // closed once the process has exited and been reaped

	mu       sync.Mutex
	signal   syscall.Signal // the last signal the supervisor sent; 0 if none
	signaled time.Time      // when it was sent
	exited   time.Time
	state    *os.ProcessState
	waitErr  error
}

// exit describes how the process ended; call it after done is closed.
func (p *proc) exit() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.state == nil:
		return fmt.Sprintf("wait failed: %v", p.waitErr)
	case p.state.Exited():
		return fmt.Sprintf("exit %d", p.state.ExitCode())
	default:
		if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + signalName(ws.Signal())
		}
		return p.state.String()
	}
}

// signalName names the signals the suite sends, and the usual crashes.
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGQUIT: "SIGQUIT"}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d (%v)", int(sig), sig)
}

// exitedCleanly reports whether the process exited with status 0.
func (p *proc) exitedCleanly() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state != nil && p.state.Exited() && p.state.ExitCode() == 0
}

// signalledWith returns the last signal sent and when.
func (p *proc) signalledWith() (syscall.Signal, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signal, p.signaled
}

func (p *proc) exitedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// send signals the process and records it. Signalling a process that
// already exited is not an error (it is reported by its exit).
func (p *proc) send(sig syscall.Signal) {
	p.mu.Lock()
	p.signal, p.signaled = sig, time.Now()
	p.mu.Unlock()
	if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintf(os.Stderr, "chaos: signal %v to %s (pid %d): %v\n", sig, p.name, p.pid, err)
	}
}

// logTail returns the last n lines of the process's log, leaving out the
// example's periodic progress lines ("consumed ..."), and names the file.
func (p *proc) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", p.logPath, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if !strings.HasPrefix(l, "consumed ") {
			lines = append(lines, l)
		}
	}
	lines = append(lines, "(log: "+p.logPath+")")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    | " + strings.Join(lines, "\n    | ")
}

// harmless are WARN lines every process of a protocol logs, left out of
// logProblems.
var harmless = []string{
	"KIP-848 Consumer Group Protocol is in 'Preview'", // librdkafka, at every start with group.protocol=consumer
}

// logProblems returns the log's WARN and ERROR lines but the harmless ones
// (at most n, and how many there were).
func (p *proc) logProblems(n int) ([]string, int) {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	var lines []string
	total := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if (bytes.Contains(line, []byte("level=WARN")) || bytes.Contains(line, []byte("level=ERROR"))) && !isHarmless(line) {
			total++
			if len(lines) < n {
				lines = append(lines, string(line))
			}
		}
	}
	return lines, total
}

func isHarmless(line []byte) bool {
	for _, h := range harmless {
		if bytes.Contains(line, []byte(h)) {
			return true
		}
	}
	return false
}

// supervisor starts cmd/example processes and makes sure none outlives
// the chaos program: each is started with PR_SET_PDEATHSIG=SIGKILL from
// one OS thread that stays alive (locked) for the whole program, so the
// kernel kills the children if the chaos process dies for any reason
// (panic, SIGKILL); killAll ends them on every orderly exit. Children get
// their own process group, so a Ctrl-C on the terminal reaches only the
// chaos program, which then kills them.
type supervisor struct {
	bin   string
	spawn chan spawnReq

	mu    sync.Mutex
	procs []*proc
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func newSupervisor(bin string) *supervisor {
	s := &supervisor{bin: bin, spawn: make(chan spawnReq)}
	go func() {
		// Never unlocked: PDEATHSIG fires when the thread that forked
		// the child exits, so that thread must live as long as we do.
		runtime.LockOSThread()
		for req := range s.spawn {
			req.reply <- req.cmd.Start()
		}
		select {} // keep the thread (and the children's parent) alive
	}()
	return s
}

// start runs the example with args as incarnation inc of slot; its output
// goes to a log file of its own in logDir.
func (s *supervisor) start(logDir string, slot, inc int, args []string) (*proc, error) {
	name := fmt.Sprintf("p%d.%d", slot, inc)
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.bin, append(args, "--client-id", name)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	reply := make(chan error, 1)
	s.spawn <- spawnReq{cmd: cmd, reply: reply}
	if err := <-reply; err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{slot: slot, inc: inc, name: name, pid: cmd.Process.Pid, started: time.Now(), logPath: logPath, done: make(chan struct{})}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.exited, p.state, p.waitErr = time.Now(), cmd.ProcessState, err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// killAll SIGKILLs every process still running and waits (a little) for
// them to be reaped.
func (s *supervisor) killAll() {
	s.mu.Lock()
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
		default:
			p.send(syscall.SIGKILL)
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			fmt.Fprintf(os.Stderr, "chaos: %s (pid %d) not reaped 5s after SIGKILL\n", p.name, p.pid)
		}
	}
}
