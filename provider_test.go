package sbx

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHandleZero(t *testing.T) {
	if !(Handle{}).IsZero() {
		t.Error("the zero handle is not zero")
	}
	for _, h := range []Handle{{Version: 1}, {Data: json.RawMessage(`{}`)}, IDHandle("x")} {
		if h.IsZero() {
			t.Errorf("%+v is zero", h)
		}
	}
}

// A handle round-trips through the ledger's JSON: the version and the
// provider's data, byte for byte; the zero handle has no data field.
func TestHandleJSON(t *testing.T) {
	h := Handle{Version: 3, Data: json.RawMessage(`{"id":"sbx-1","pid":42}`)}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"v":3,"data":{"id":"sbx-1","pid":42}}` {
		t.Errorf("encoded %s", b)
	}
	var got Handle
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != h.Version || string(got.Data) != string(h.Data) {
		t.Errorf("decoded %+v, want %+v", got, h)
	}
	if b, _ := json.Marshal(Handle{}); string(b) != `{"v":0}` {
		t.Errorf("the zero handle encodes as %s", b)
	}
}

func TestIDHandle(t *testing.T) {
	anyID := func(string) bool { return true }
	h := IDHandle("sbx-abc")
	if h.Version != 1 || string(h.Data) != `{"id":"sbx-abc"}` {
		t.Errorf("IDHandle = %+v (%s)", h, h.Data)
	}
	if id, err := HandleID(h, anyID); err != nil || id != "sbx-abc" {
		t.Errorf("HandleID = %q, %v", id, err)
	}
	// What a later process reads back from the ledger works too.
	b, _ := json.Marshal(h)
	var stored Handle
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if id, err := HandleID(stored, anyID); err != nil || id != "sbx-abc" {
		t.Errorf("HandleID of the stored handle = %q, %v", id, err)
	}
}

func TestHandleIDRefuses(t *testing.T) {
	prefixed := func(id string) bool { return strings.HasPrefix(id, "sbx-") }
	for _, c := range []struct {
		name string
		h    Handle
		want string
	}{
		{"another version", Handle{Version: 2, Data: json.RawMessage(`{"id":"sbx-a"}`)}, "handle version 2 is not one this provider made"},
		{"the zero handle", Handle{}, "handle version 0 is not one this provider made"},
		{"no data", Handle{Version: 1}, "handle is malformed"},
		{"not JSON", Handle{Version: 1, Data: json.RawMessage(`sbx-a`)}, "handle is malformed"},
		{"not an object", Handle{Version: 1, Data: json.RawMessage(`["sbx-a"]`)}, "handle is malformed"},
		{"an empty ID", Handle{Version: 1, Data: json.RawMessage(`{"id":""}`)}, "handle is malformed"},
		{"no ID", Handle{Version: 1, Data: json.RawMessage(`{"name":"sbx-a"}`)}, "handle is malformed"},
		{"an ID the provider refuses", IDHandle("../etc"), "handle is malformed"},
	} {
		id, err := HandleID(c.h, prefixed)
		if err == nil || err.Error() != c.want || id != "" {
			t.Errorf("%s: HandleID = %q, %v; want the error %q", c.name, id, err, c.want)
		}
	}
}
