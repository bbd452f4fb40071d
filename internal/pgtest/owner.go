package pgtest

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// serverUser is the OS user that initdb and postgres run as when the test
// binary runs as root, which both refuse. Debian's package creates it.
const serverUser = "postgres"

// owner is the OS user that the server's processes run as and that owns
// its directory.
type owner struct {
	cred *syscall.Credential // nil: the current user
}

// serverOwner returns the current user when it is not root, else the OS
// user serverUser with its groups. A missing serverUser wraps
// ErrNotInstalled.
func serverOwner() (owner, error) {
	if os.Geteuid() != 0 {
		return owner{}, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return owner{}, fmt.Errorf("%w: running as root, and initdb refuses root: "+
			"no OS user %q to run it as (%v)", ErrNotInstalled, serverUser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return owner{}, fmt.Errorf("pgtest: user %q: uid %q: %w", serverUser, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return owner{}, fmt.Errorf("pgtest: user %q: gid %q: %w", serverUser, u.Gid, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(g))
			}
		}
	}
	return owner{cred: cred}, nil
}

// chown gives path to the owner; nothing to do for the current user.
func (o owner) chown(path string) error {
	if o.cred == nil {
		return nil
	}
	return os.Chown(path, int(o.cred.Uid), int(o.cred.Gid))
}

// sysProcAttr is how a server process starts: as the owner, in a process
// group of its own, so that a signal to the test binary's group (Ctrl-C
// at a terminal) does not reach it: the server ends when the test stops
// it or the test binary ends.
func (o owner) sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: o.cred}
}
