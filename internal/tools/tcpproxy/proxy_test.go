package tcpproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every blocking read; it only fires when something is stuck.
const wait = 10 * time.Second

// echoServer echoes every connection until closed at test cleanup.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads it back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	write(t, c, msg)
	readExactly(t, c, msg)
}

// write writes msg to c.
func write(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
}

func readExactly(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %q back: %v (got %q)", want, err, got)
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// readFails asserts the connection is closed or reset: a read returns an
// error other than a timeout.
func readFails(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	n, err := c.Read(make([]byte, 16))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a cut connection: %d bytes, err %v; want it closed", n, err)
	}
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// proxiedConn starts an echo server, a proxy in front of it and a
// connection through the proxy, and makes one round trip on it.
func proxiedConn(t *testing.T) (*Proxy, net.Conn) {
	t.Helper()
	srv := echoServer(t)
	p := newProxy(t, srv.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "before")
	return p, c
}

func TestForward(t *testing.T) {
	p, c := proxiedConn(t)
	roundTrip(t, c, "again")
	if n := p.Accepted(); n != 1 {
		t.Errorf("Accepted = %d, want 1", n)
	}
}

func TestStallHoldsBytesUntilRestore(t *testing.T) {
	p, c := proxiedConn(t)

	p.Stall()
	if m := p.Mode(); m != Stalled {
		t.Fatalf("Mode = %v, want stalled", m)
	}
	write(t, c, "held")
	late := dial(t, p.Addr()) // accepted while stalled: stalled too
	write(t, late, "late")
	waitHeld(t, p, 2) // both writes read by the proxy and held
	// Nothing may come back while stalled. A correct proxy never answers,
	// so this short observation cannot fail spuriously.
	for _, conn := range []net.Conn{c, late} {
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, err := conn.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read while stalled: %d bytes, err %v; want nothing", n, err)
		}
	}

	p.Restore()
	readExactly(t, c, "held")
	readExactly(t, late, "late")
	roundTrip(t, c, "after")
	if n := p.Held(); n != 0 {
		t.Errorf("Held = %d after Restore, want 0", n)
	}
}

// waitHeld waits until the proxy holds at least n chunks.
func waitHeld(t *testing.T, p *Proxy, n int) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for p.Held() < n {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("Held = %d after %v, want %d", p.Held(), wait, n)
		}
	}
}

func TestCutResetsAndRefusesUntilRestore(t *testing.T) {
	p, c := proxiedConn(t)

	p.Cut()
	readFails(t, c)
	during := dial(t, p.Addr()) // the kernel accepts; the proxy closes it
	readFails(t, during)

	p.Restore()
	readFails(t, c) // a cut connection stays cut
	roundTrip(t, dial(t, p.Addr()), "after")
	if n := p.Accepted(); n != 3 {
		t.Errorf("Accepted = %d, want 3", n)
	}
}

func TestCutWhileStalledReleasesConnections(t *testing.T) {
	p, c := proxiedConn(t)
	p.Stall()
	write(t, c, "held")
	p.Cut()
	readFails(t, c)
	p.Restore()
	roundTrip(t, dial(t, p.Addr()), "after")
}

func TestCloseWhileStalledReturns(t *testing.T) {
	p, c := proxiedConn(t)
	p.Stall()
	write(t, c, "held")
	if err := p.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	readFails(t, c)
	if err := p.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	p.Restore() // no-op after Close
	if m := p.Mode(); m != Stalled {
		t.Errorf("Mode after Close and Restore = %v, want it unchanged (stalled)", m)
	}
}

func TestNewRejectsEmptyTarget(t *testing.T) {
	if _, err := New(""); err == nil {
		t.Fatal("New(\"\") = nil error")
	}
}

func TestDialFailureClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there any more
	p := newProxy(t, dead)
	readFails(t, dial(t, p.Addr()))
}

func TestFrontAdvertisesTheProxy(t *testing.T) {
	var proxies []*Proxy
	listen := ListenFunc(func(p *Proxy) { proxies = append(proxies, p) })
	ln, err := listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(proxies) != 1 {
		t.Fatalf("ListenFunc reported %d proxies, want 1", len(proxies))
	}
	p := proxies[0]
	if got := ln.Addr().String(); got != p.Addr() {
		t.Fatalf("listener Addr = %s, want the proxy's %s", got, p.Addr())
	}
	if p.Target() == p.Addr() {
		t.Fatalf("proxy forwards to itself (%s)", p.Target())
	}
	done := make(chan struct{})
	go func() { // echo one connection accepted from the real listener
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c := dial(t, ln.Addr().String())
	roundTrip(t, c, "through the proxy")
	if n := p.Accepted(); n != 1 {
		t.Errorf("proxy accepted %d connections, want 1: the client bypassed it", n)
	}
	p.Cut()
	readFails(t, c)
	if err := ln.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := ln.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	<-done
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("proxy still accepts after its listener was closed")
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{Forward: "forward", Stalled: "stalled", Cut: "cut", Cut + 1: "Mode(3)", -1: "Mode(-1)"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}
