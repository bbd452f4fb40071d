package pgtest

import (
	"os"
	"strconv"
	"strings"
)

// initdbArgs initialise the data directory: the superuser role, trust
// authentication for local and loopback connections, UTF-8 in the C
// locale (English messages, which the port check reads), and no fsync of
// the new files.
func (s *Server) initdbArgs() []string {
	return []string{
		"-D", s.dataDir(),
		"-U", superuser,
		"--auth=trust",
		"--encoding=UTF8",
		"--locale=C",
		"--no-sync",
	}
}

// serverArgs start the postmaster. Nothing is flushed to disk (fsync and
// full-page writes off), which loses data only when the machine crashes;
// commits stay synchronous, so that a commit has reached the kernel when
// it returns and survives Kill, which tests use to simulate a crash of
// the database.
func (s *Server) serverArgs() []string {
	args := []string{"-D", s.dataDir(), "-p", strconv.Itoa(s.port)}
	for _, setting := range []string{
		"listen_addresses=127.0.0.1",
		"unix_socket_directories=" + s.dir,
		"max_connections=100",
		"fsync=off",
		"full_page_writes=off",
		"synchronous_commit=on",
	} {
		args = append(args, "-c", setting)
	}
	return args
}

// serverEnv is this process's environment without the variables that
// change what libpq tools and the server do (PG*) and with the C locale.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}
