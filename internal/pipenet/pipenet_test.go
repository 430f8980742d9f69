package pipenet

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

func TestListenDialClose(t *testing.T) {
	ctx := context.Background()
	if _, ok, _ := Dial(ctx, "nothing.pipe:80"); ok {
		t.Fatal("a dial found a listener nothing made")
	}
	l, err := Listen("x.pipe:80")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("x.pipe:80"); err == nil {
		t.Fatal("two listeners at one address")
	}
	if _, err := Listen("no port"); err == nil {
		t.Fatal("an address without a port was taken")
	}
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c) // echo
		c.Close()
	}()
	c, ok, err := Dial(ctx, "x.pipe:80")
	if !ok || err != nil {
		t.Fatalf("dial: %v %v", ok, err)
	}
	if c.RemoteAddr().String() != "x.pipe:80" || c.RemoteAddr().Network() != "pipe" {
		t.Errorf("remote address %s/%s", c.RemoteAddr().Network(), c.RemoteAddr())
	}
	go c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	c.Close()

	l.Close()
	if _, ok, err := Dial(ctx, "x.pipe:80"); ok || err != nil {
		t.Fatalf("a closed listener's address still answers: %v %v", ok, err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept after close: %v", err)
	}
	again, err := Listen("x.pipe:80")
	if err != nil {
		t.Fatalf("the address was not freed: %v", err)
	}
	again.Close()
}

func TestDialEndsWithItsContext(t *testing.T) {
	l, err := Listen("y.pipe:80")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no one accepts: the dial ends with its context
	if _, ok, err := Dial(ctx, "y.pipe:80"); !ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("dial: %v %v", ok, err)
	}
}
