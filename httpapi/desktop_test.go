package httpapi

import (
	"bytes"
	"testing"
)

// A view-only viewer's messages reach the VNC server without its keys,
// pointer and clipboard, however the stream is cut: the handshake and the
// rest pass whole; a message of no known type ends the stream.
func TestViewOnlyFilterDropsInput(t *testing.T) {
	handshake := append([]byte("RFB 003.008\n"), 1, 1) // version, security None, ClientInit shared
	setEncodings := []byte{2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7}
	key := []byte{4, 1, 0, 0, 0, 0, 0, 0x61}
	pointer := []byte{5, 1, 0, 10, 0, 20}
	cut := append([]byte{6, 0, 0, 0, 0, 0, 0, 3}, "abc"...)
	update := []byte{3, 1, 0, 0, 0, 0, 0, 10, 0, 10}
	in := bytes.Join([][]byte{handshake, setEncodings, key, pointer, cut, update}, nil)
	want := bytes.Join([][]byte{handshake, setEncodings, update}, nil)
	for _, chunk := range []int{1, 3, 7, len(in)} {
		var out bytes.Buffer
		f := &viewOnlyFilter{w: &out}
		for i := 0; i < len(in); i += chunk {
			if _, err := f.Write(in[i:min(i+chunk, len(in))]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("chunks of %d: passed %v, want %v", chunk, out.Bytes(), want)
		}
	}
	f := &viewOnlyFilter{w: &bytes.Buffer{}}
	if _, err := f.Write(append(handshake, 9)); err == nil {
		t.Error("a message of an unknown type passed")
	}
}
