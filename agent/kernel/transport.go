package kernel

import (
	"bufio"
	"context"
	"net"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// buffered is zmq4's ipc transport (Unix sockets) with reads through a
// buffer: zmq4 reads each frame's header and each body with a read of its
// own, a system call each, which gVisor makes dear (a kernel's answer is a
// few messages of six frames). Unix sockets rather than loopback TCP: in
// gVisor they skip the sandbox's network stack, and their files, in a
// directory only the kernel's user may enter, admit no other user of the
// sandbox.
type buffered struct{ transport.Transport }

// transportName is buffered's scheme in an endpoint.
const transportName = "sbx+ipc"

func init() {
	if err := zmq4.RegisterTransport(transportName, buffered{transport.New("unix")}); err != nil {
		panic(err)
	}
}

func (t buffered) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.Transport.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
