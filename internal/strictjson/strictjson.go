// Package strictjson decodes JSON request bodies strictly, for every HTTP
// API of sbx: encoding/json alone matches field names case-insensitively,
// ignores unknown fields unless told, takes null for an object, and stops
// at the end of the first value whatever follows it.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxEcho is how many bytes of a caller's input an error quotes at most.
const MaxEcho = 64

// Problem is one thing wrong with a body: the field it is about (a path
// such as "env" or "items[2].name"; empty for the body as a whole) and
// what is wrong with it.
type Problem struct {
	Field   string
	Message string
	Unknown bool // the field is not one of the type's
}

// Error is what Decode refuses a body for: one or more problems.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

func fail(field, format string, args ...any) *Error {
	return &Error{Problems: []Problem{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// Decode decodes data, which must hold exactly one JSON object, into v, a
// pointer to a struct. Every key must be the exact JSON name of a field
// (at every depth: in nested objects, arrays and map values of struct
// type), and each unknown key is a problem; null, a value of another kind,
// an empty body or data after the object are refused. Errors quote at most
// MaxEcho bytes of any input (see Quote).
func Decode(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("strictjson: Decode needs a pointer, not %T", v)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return fail("", "the request body is empty; it must be a JSON object")
	}
	if !json.Valid(trimmed) {
		return syntaxError(data)
	}
	if trimmed[0] != '{' {
		return fail("", "the request body must be a JSON object, not %s", kindOf(trimmed))
	}
	var problems []Problem
	check(trimmed, t.Elem(), "", &problems)
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	return nil
}

// syntaxError describes data that is not one JSON value: invalid, or
// followed by more.
func syntaxError(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return decodeError(err)
	}
	return fail("", "the request body must hold one JSON object and nothing after it (more at byte %d)", dec.InputOffset())
}

// check walks data along type t and adds a problem for each key t lacks,
// and for null where t is a struct.
func check(data json.RawMessage, t reflect.Type, path string, problems *[]Problem) {
	if custom(t) {
		// A type that decodes itself says what is wrong without naming
		// the field: decode it here, where the field is known.
		if t.Kind() != reflect.Interface && string(data) != "null" {
			if err := json.Unmarshal(data, reflect.New(t).Interface()); err != nil {
				*problems = append(*problems, Problem{Field: path, Message: fmt.Sprintf("%s is not valid: %s", fieldName(path), Short(strings.TrimPrefix(err.Error(), "json: ")))})
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if string(data) != "null" {
			check(data, t.Elem(), path, problems)
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return // the typed decode names the bad value
		}
		for i, item := range items {
			check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), problems)
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		for _, k := range slices.Sorted(mapKeys(m)) {
			check(m[k], t.Elem(), join(path, Quote(k)), problems)
		}
	case reflect.Struct:
		if string(data) == "null" {
			*problems = append(*problems, Problem{Field: path, Message: fmt.Sprintf("%s must be an object, not null", fieldName(path))})
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return
		}
		fields := fieldsOf(t)
		for _, k := range slices.Sorted(mapKeys(obj)) {
			ft, ok := fields[k]
			if !ok {
				name := join(path, Short(k))
				*problems = append(*problems, Problem{Field: name, Message: fmt.Sprintf("unknown field %s", Quote(join(path, k))), Unknown: true})
				continue
			}
			check(obj[k], ft, join(path, k), problems)
		}
	}
}

var (
	unmarshaler     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// custom reports whether t decodes itself (time.Time, json.RawMessage…):
// its keys are its own business.
func custom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(unmarshaler) || p.Implements(unmarshaler) || t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler) ||
		t.Kind() == reflect.Interface
}

// fieldsOf maps the JSON names of t's fields, those of embedded structs
// included, to their types, as encoding/json names them.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range fieldsOf(ft) {
					if _, shadowed := fields[k]; !shadowed {
						fields[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

func mapKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldName(path string) string {
	if path == "" {
		return "the request body"
	}
	return "field " + Quote(path)
}

// kindOf names the kind of a valid JSON value.
func kindOf(v []byte) string {
	switch v[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "a number"
}

// decodeError names the field of an encoding/json error, quoting no more
// than MaxEcho bytes of the input.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		value := typeErr.Value
		if num, ok := strings.CutPrefix(value, "number "); ok {
			value = "the number " + Short(num)
		} else {
			value = "a" + article(value) + " " + value
		}
		if typeErr.Field == "" {
			return fail("", "the request body must be %s, not %s", typeName(typeErr.Type), value)
		}
		return fail(typeErr.Field, "field %s must be %s, not %s", Quote(typeErr.Field), typeName(typeErr.Type), value)
	case errors.As(err, &syntaxErr):
		return fail("", "the request body is not valid JSON at byte %d: %s", syntaxErr.Offset, Short(strings.TrimPrefix(syntaxErr.Error(), "json: ")))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fail("", "the request body is not valid JSON: it ends too early")
	}
	return fail("", "the request body is not valid JSON: %s", Short(strings.TrimPrefix(err.Error(), "json: ")))
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "n"
	}
	return ""
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<(t.Bits())-1)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return t.String()
}

// Short cuts s to at most MaxEcho bytes (on a rune boundary), marking a
// cut with "…".
func Short(s string) string { return Cut(s, MaxEcho) }

// Cut cuts s to at most n bytes (on a rune boundary), marking a cut with
// "…".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Quote is s quoted as Go would (%q), cut to at most MaxEcho bytes of s
// first: how an error names a caller's input.
func Quote(s string) string {
	if len(s) <= MaxEcho {
		return strconv.Quote(s)
	}
	return strconv.Quote(Short(s)[:len(Short(s))-len("…")]) + "…"
}
