package tcpproxy

import (
	"errors"
	"net"
	"sync"
)

// Front starts a proxy forwarding to ln and returns it with a listener
// that accepts from ln but reports the proxy's address as its Addr. A
// server given that listener advertises the proxy, so its clients' every
// connection goes through it. Closing the returned listener closes ln and
// then the proxy (waiting for its goroutines); closing it again is a
// no-op. On error ln is closed.
func Front(ln net.Listener) (*Proxy, net.Listener, error) {
	p, err := New(ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return p, &fronted{Listener: ln, p: p}, nil
}

// ListenFunc returns a function with net.Listen's signature (what kfake's
// ListenFn option takes) that listens as net.Listen does, fronts every
// listener with a proxy and hands each new proxy to add, in listening
// order. add must not block.
func ListenFunc(add func(*Proxy)) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		p, fl, err := Front(ln)
		if err != nil {
			return nil, err
		}
		add(p)
		return fl, nil
	}
}

type fronted struct {
	net.Listener
	p    *Proxy
	once sync.Once
	err  error
}

func (f *fronted) Addr() net.Addr { return f.p.ln.Addr() }

func (f *fronted) Close() error {
	f.once.Do(func() {
		f.err = errors.Join(f.Listener.Close(), f.p.Close())
	})
	return f.err
}
