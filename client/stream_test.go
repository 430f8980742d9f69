package client

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
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

func TestReadNDJSON(t *testing.T) {
	big := strings.Repeat("A", 3<<20) // past the reader's buffer, as a 2 MiB chunk is in base64
	stream := "{\"type\":\"start\",\"pid\":7}\n\n{\"type\":\"stdout\",\"data\":\"" + big + "\"}\n{\"type\":\"end\",\"exitCode\":0}\n{\"type\":\"ignored\"}\n"
	var got []apiv1.CommandEvent
	err := readNDJSON(strings.NewReader(stream), func(e apiv1.CommandEvent) error {
		got = append(got, e)
		if e.Type == "end" {
			return io.EOF
		}
		return nil
	})
	if err != nil || len(got) != 3 || got[0].PID != 7 || len(got[1].Data) != len(big)*3/4 {
		t.Fatalf("read %d events: %v", len(got), err)
	}

	tooLong := "{\"type\":\"stdout\",\"data\":\"" + strings.Repeat("A", maxLine) + "\"}\n"
	if err := readNDJSON(strings.NewReader(tooLong), func(apiv1.CommandEvent) error { return nil }); err == nil {
		t.Error("a line past maxLine was read")
	}
	if err := readNDJSON(strings.NewReader(`{"type":"end"`), func(apiv1.CommandEvent) error { return nil }); err == nil {
		t.Error("a cut line was read")
	}
}

// Output events decode the same with and without the fast path, whatever
// form the JSON takes.
func TestDecodeLineMatchesJSON(t *testing.T) {
	for _, line := range []string{
		`{"type":"stdout","data":"aGVsbG8vd29ybGQ/Pz8+"}`,
		`{"type":"stderr","data":""}`,
		`{"type":"stdout","data":"aGVsbG8\/d29ybGQ="}`, // an escaped slash: not the fast form
		`{"data":"aGk=","type":"stdout"}`,
		`{"type":"stdout","data":"aGk=","pid":3}`,
		`{"type":"start","pid":7,"tag":"x"}`,
		`{"type":"stdout","data":"not base64!"}`,
	} {
		var fast, slow apiv1.CommandEvent
		var scratch []byte
		fastErr := decodeLine([]byte(line), &fast, &scratch)
		slowErr := json.Unmarshal([]byte(line), &slow)
		if (fastErr == nil) != (slowErr == nil) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v %v, encoding/json %+v %v", line, fast, fastErr, slow, slowErr)
		}
	}
}
