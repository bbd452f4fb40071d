//go:build linux

package pgtest

import (
	"bytes"
	"os"
	"strconv"
)

// descendants returns the processes below pid: its children, theirs, and
// so on, from /proc. PostgreSQL's children each call setsid, so they are
// not in the postmaster's process group: only their parent links them.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(p); ok {
			children[st.ppid] = append(children[st.ppid], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// alive returns those of pids that have not exited. Zombies (exited,
// waiting for their parent to reap them) do not count: they hold no
// memory, socket or file, and a killed postmaster's children become
// children of init, which may be slow to reap them.
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		if st, ok := procStat(p); ok && st.state != 'Z' && st.state != 'X' {
			out = append(out, p)
		}
	}
	return out
}

// stopped reports whether pid is stopped by a signal, or has exited.
func stopped(pid int) bool {
	st, ok := procStat(pid)
	return !ok || st.state == 'T' || st.state == 'Z' || st.state == 'X'
}

// stat is what procStat reads of a process.
type stat struct {
	state byte // R, S, D, T, Z, ...
	ppid  int
}

// procStat reads /proc/<pid>/stat; ok is false when pid is gone.
func procStat(pid int) (st stat, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return stat{}, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid}, true
}
