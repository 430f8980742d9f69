package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/sbxdev/sbx"
)

// maxBody bounds every request body.
const maxBody = 1 << 20

// staleFields are fields of older sandbox APIs that sbx rejects instead of ignoring.
var staleFields = map[string]bool{
	"timeoutMs": true, "autoResume": true, "secure": true, "allow_internet_access": true,
	"network": true, "mcp": true, "volume_mounts": true, "volumeMounts": true,
}

// readBody reads a request body of at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, sbx.Errorf(sbx.EInvalid, "request body is larger than %d bytes", maxBody)
	}
	return data, err
}

// decodeStrict decodes a JSON object into v, which must point to a struct.
// Field names must match exactly (encoding/json alone would accept any case);
// an unknown field is an error that names it, a stale one an error saying it
// is not supported. An empty body leaves v as it is.
func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := checkFields(data, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return sbx.Errorf(sbx.EInvalid, "request body must hold one JSON object")
	}
	return nil
}

// checkFields walks data along struct type t and rejects keys t does not have.
func checkFields(data json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		if path == "" {
			return jsonError(err)
		}
		return nil // the typed decode names the bad value
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	var p problems
	for _, key := range sortedKeys(obj) {
		name := path + key
		ft, ok := fields[key]
		switch {
		case ok:
			if err := checkFields(obj[key], ft, name+"."); err != nil {
				return err
			}
		case path == "" && staleFields[key]:
			p.Add(name, "field %q is not supported by this API; remove it (see /api/v1/openapi.json)", name)
		default:
			p.Add(name, "unknown field %q", name)
		}
	}
	return p.Err()
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonError turns an encoding/json error into a message that names the field.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return sbx.Errorf(sbx.EInvalid, "request body must be a JSON object, not %s", typeErr.Value)
		}
		return sbx.Invalid(field, "field %q must be %s, not %s", field, typeName(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return sbx.Errorf(sbx.EInvalid, "request body is not valid JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return sbx.Errorf(sbx.EInvalid, "request body is not valid JSON: it ends too early")
	}
	return sbx.Errorf(sbx.EInvalid, "request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice:
		return "an array"
	}
	return t.String()
}
