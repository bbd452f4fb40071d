package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procTreeCPU returns the user+system CPU time that process root and
// every process below it (children, their children, ...) that is still
// running have used so far: for the broker child, kfake in it or the
// Java processes of Apache Kafka it started. Processes that ended are
// not counted (the broker's do not end while it serves).
func procTreeCPU(root int) (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended since ReadDir
		}
		ppid, cpu, err := parseStat(data)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		procs[pid] = proc{ppid, cpu}
	}
	if _, ok := procs[root]; !ok {
		return 0, fmt.Errorf("process %d is not running", root)
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var total time.Duration
	todo := []int{root}
	for len(todo) > 0 {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		total += procs[pid].cpu
		todo = append(todo, children[pid]...)
	}
	return total, nil
}

// parseStat reads the parent pid and utime+stime of a /proc/<pid>/stat
// line. The command name, field 2, is in parentheses and may hold spaces
// and parentheses itself, so the fields after it are counted from its
// last closing parenthesis: state is field 3, ppid 4, utime 14, stime 15.
func parseStat(data []byte) (ppid int, cpu time.Duration, err error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("no command name in %q", data)
	}
	f := bytes.Fields(data[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	ppid, err = strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, fmt.Errorf("ppid: %w", err)
	}
	utime, err := strconv.ParseInt(string(f[11]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseInt(string(f[12]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("stime: %w", err)
	}
	return ppid, time.Duration(utime+stime) * clockTick, nil
}

// serverCPU returns the CPU time of a server whose processes come and go
// under one long-lived parent (PostgreSQL: a backend per connection under
// the postmaster root): the process tree's, as procTreeCPU, plus what
// root's children used before they ended and root reaped them (its
// cutime and cstime). A connection's backend that ended during a run
// (the run child closed it) is counted that way, where procTreeCPU alone
// would lose it.
func serverCPU(root int) (time.Duration, error) {
	tree, err := procTreeCPU(root)
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(root), "stat"))
	if err != nil {
		return 0, err
	}
	reaped, err := parseReaped(data)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", root, err)
	}
	return tree + reaped, nil
}

// parseReaped reads cutime+cstime (fields 16 and 17) of a /proc/<pid>/stat
// line: the CPU time of the children the process waited for, and of
// theirs that they waited for.
func parseReaped(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", data)
	}
	f := bytes.Fields(data[i+1:]) // f[0] is field 3
	if len(f) < 15 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 15", len(f))
	}
	cutime, err := strconv.ParseInt(string(f[13]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cutime: %w", err)
	}
	cstime, err := strconv.ParseInt(string(f[14]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cstime: %w", err)
	}
	return time.Duration(cutime+cstime) * clockTick, nil
}
