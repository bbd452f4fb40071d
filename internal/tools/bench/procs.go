package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// child starts this program (or the test binary) in a child mode, its
// stderr to logPath.
func child(ctx context.Context, logPath string, args ...string) (*exec.Cmd, *os.File, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = logf
	cmd.WaitDelay = 5 * time.Second
	return cmd, logf, nil
}

// brokerProc is the running broker child.
type brokerProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logf    *os.File
	addr    string
	drained chan struct{} // closed once the child's stdout reached EOF
}

// startBroker starts the broker child (a broker of the given kind) with
// topics and waits until it has filled them. When ctx ends the child gets
// SIGTERM, on which it stops its broker and exits (SIGKILL if it takes
// longer than a minute).
func startBroker(ctx context.Context, dir string, kind kafkatest.Kind, records, value int, topics []topicSpec) (*brokerProc, error) {
	args := []string{"broker", "-kind", string(kind), "-records", fmt.Sprint(records), "-value", fmt.Sprint(value)}
	for _, t := range topics {
		args = append(args, "-topic", t.String())
	}
	logPath := filepath.Join(dir, "broker.log")
	cmd, logf, err := child(ctx, logPath, args...)
	if err != nil {
		return nil, err
	}
	// SIGTERM lets the child stop Apache Kafka's processes and remove
	// their data; SIGKILL would leave the data behind.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	b := &brokerProc{cmd: cmd, stdin: stdin, logf: logf, drained: make(chan struct{})}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), brokerReady); ok {
			b.addr = addr
			go func() {
				defer close(b.drained)
				_, _ = io.Copy(io.Discard, stdout)
			}()
			return b, nil
		}
	}
	close(b.drained)
	b.stop()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("the broker was stopped before it was ready: %w", err)
	}
	return nil, fmt.Errorf("the broker child exited before it was ready; its log:\n%s", tail(logPath, 40))
}

// stop closes the broker's stdin (it exits) and waits for it.
func (b *brokerProc) stop() {
	b.stdin.Close()
	<-b.drained // its stdout is read to the end before Wait closes it
	_ = b.cmd.Wait()
	b.logf.Close()
}

// runProc runs one measured run child with args and returns its Result.
// A child that exits non-zero without a Result is an error naming the
// tail of its log.
func runProc(ctx context.Context, timeout time.Duration, logPath string, args []string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, logf, err := child(ctx, logPath, append([]string{"run"}, args...)...)
	if err != nil {
		return Result{}, err
	}
	defer logf.Close()
	var out bytes.Buffer
	cmd.Stdout = &out
	runErr := cmd.Run()
	var res Result
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if jerr := json.Unmarshal([]byte(last), &res); jerr != nil {
		switch err := ctx.Err(); {
		case errors.Is(err, context.DeadlineExceeded):
			runErr = fmt.Errorf("%w (timeout %v)", err, timeout)
		case err != nil:
			runErr = err
		}
		return res, fmt.Errorf("the run printed no result (%v); its log:\n%s", errors.Join(runErr, jerr), tail(logPath, 20))
	}
	if res.Err != "" {
		return res, fmt.Errorf("the run failed: %s; its log:\n%s", res.Err, tail(logPath, 10))
	}
	return res, runErr
}

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
