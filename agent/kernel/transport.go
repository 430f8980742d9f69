package kernel

import (
	"bufio"
	"context"
	"net"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// bufferedTCP is zmq4's tcp transport with reads through a buffer: zmq4
// reads each frame's header and each body with a read of its own, a system
// call each, which gVisor makes dear (a kernel's answer is a few messages of
// six frames).
type bufferedTCP struct{ transport.Transport }

// transportName is bufferedTCP's scheme in an endpoint.
const transportName = "sbx+tcp"

func init() {
	if err := zmq4.RegisterTransport(transportName, bufferedTCP{transport.New("tcp")}); err != nil {
		panic(err)
	}
}

func (t bufferedTCP) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
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
