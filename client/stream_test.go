package client

import (
	"net/http"
	"testing"
	"time"
)

func TestStreamingDropsTimeout(t *testing.T) {
	c := New(Options{HTTPClient: &http.Client{Timeout: time.Second}})
	if s := c.streaming(); s.Timeout != 0 || c.http.Timeout != time.Second {
		t.Errorf("streaming timeout %v, client's %v", s.Timeout, c.http.Timeout)
	}
	if d := New(Options{}); d.streaming() != http.DefaultClient {
		t.Error("a client without a timeout is not reused as is")
	}
}
