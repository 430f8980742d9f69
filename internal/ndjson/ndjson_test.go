package ndjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

func TestRead(t *testing.T) {
	big := strings.Repeat("A", 3<<20) // past the reader's buffer, as a 2 MiB chunk is in base64
	stream := "{\"type\":\"start\",\"pid\":7}\n\n{\"type\":\"stdout\",\"data\":\"" + big + "\"}\n{\"type\":\"end\",\"exitCode\":0}\n{\"type\":\"ignored\"}\n"
	var got []apiv1.CommandEvent
	err := Read(strings.NewReader(stream), func(e apiv1.CommandEvent) error {
		got = append(got, e)
		if e.Type == "end" {
			return io.EOF
		}
		return nil
	})
	if err != nil || len(got) != 3 || got[0].PID != 7 || len(got[1].Data) != len(big)*3/4 {
		t.Fatalf("read %d events: %v", len(got), err)
	}

	tooLong := "{\"type\":\"stdout\",\"data\":\"" + strings.Repeat("A", MaxLine) + "\"}\n"
	if err := Read(strings.NewReader(tooLong), func(apiv1.CommandEvent) error { return nil }); err == nil {
		t.Error("a line past MaxLine was read")
	}
	if err := Read(strings.NewReader(`{"type":"end"`), func(apiv1.CommandEvent) error { return nil }); err == nil {
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

// BenchmarkReadCommandStream reads 16 MiB of output in 256 KiB events, as
// the agent writes them: the fast path decodes them with a few allocations
// per stream, none per event once its buffer has grown.
func BenchmarkReadCommandStream(b *testing.B) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 16<<10)
	var s strings.Builder
	s.WriteString("{\"type\":\"start\",\"pid\":7}\n")
	for range 64 {
		s.WriteString(`{"type":"stdout","data":"` + base64.StdEncoding.EncodeToString(chunk) + "\"}\n")
	}
	s.WriteString("{\"type\":\"end\",\"exitCode\":0}\n")
	stream := s.String()
	b.SetBytes(int64(64 * len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := Read(strings.NewReader(stream), func(e apiv1.CommandEvent) error { n += len(e.Data); return nil }); err != nil || n != 64*len(chunk) {
			b.Fatal(n, err)
		}
	}
}
