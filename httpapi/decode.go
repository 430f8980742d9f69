package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// maxBody bounds every request body.
const maxBody = 1 << 20

// maxDrain bounds what is read and dropped of a body refused for its size,
// so that a client still sending it finishes and reads the 413: closing on
// unread bytes resets the connection, and the client sees the reset
// instead of the answer (nginx's lingering close does the same).
const maxDrain = 8 << 20

// staleFields are fields of older sandbox APIs that sbx rejects instead of ignoring.
var staleFields = map[string]bool{
	"timeoutMs": true, "autoResume": true, "secure": true, "allow_internet_access": true,
	"network": true, "mcp": true, "volume_mounts": true, "volumeMounts": true,
}

// readJSON reads a JSON request body of at most maxBody bytes (its
// Content-Type was checked with the route's: checkInput).
func readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		drain(r)
		return nil, sbx.Errorf(sbx.ETooLarge, "the request body is larger than %d bytes", maxBody)
	}
	return data, err
}

// drain reads and drops what is left of a body refused for its size, up
// to maxDrain bytes.
func drain(r *http.Request) { io.CopyN(io.Discard, r.Body, maxDrain) }

// isJSON reports whether a Content-Type names JSON: application/json or a
// +json type.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// decodeStrict decodes a JSON object into v, which must point to a struct,
// with package strictjson: exact field names, unknown fields named, null
// and trailing data refused, at most a short prefix of the input echoed;
// a stale field is an error saying it is not supported. An empty body
// leaves v as it is.
func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	err := strictjson.Decode(data, v)
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return err
	}
	e := &sbx.Error{Code: sbx.EInvalid}
	var msgs []string
	for _, p := range se.Problems {
		if p.Unknown && staleFields[p.Field] {
			p.Message = fmt.Sprintf("field %q is not supported by this API; remove it (see /api/v1/openapi.json)", p.Field)
		}
		msgs = append(msgs, p.Message)
		if p.Field != "" {
			e.Fields = append(e.Fields, sbx.FieldError{Field: p.Field, Message: p.Message})
		}
	}
	e.Message = strings.Join(msgs, "; ")
	return e
}

// problems collects field errors of a body.
type problems = sbx.Problems
