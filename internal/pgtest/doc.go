// Package pgtest runs a real PostgreSQL server for tests.
//
// Start gives one test its own server; Shared gives all the tests of a
// package one server, started by the first test that asks for it and
// stopped from TestMain. Each server is initialised by initdb in a fresh
// temporary directory, listens on a free loopback port with trust
// authentication for the superuser "postgres", and runs with fsync and
// full-page writes off: it survives a crash of its own processes (Kill,
// then Restart) without losing a committed transaction, not a crash of
// the machine. CreateDatabase gives each test a database of its own.
//
// The binaries come from PATH (initdb and postgres in one directory) or
// else from the newest /usr/lib/postgresql/*/bin, where Debian's
// postgresql package installs them. When there are none, the tests that
// need a server skip, unless the environment variable
// SLUICE_REQUIRE_POSTGRES is set: then they fail, naming what is
// missing. initdb and postgres refuse to run as root, so a test binary
// running as root runs them as the OS user "postgres".
//
// No server process outlives the test binary: on Linux the postmaster is
// started with SIGKILL as its parent-death signal, and its children end
// when they see it gone. Stop, Kill and the cleanups return once every
// process of the server is gone.
package pgtest
